#include "engine/offline_engine.hpp"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>

namespace parley {

namespace {

// Refuses the whole batch before anything runs, naming the first bad request.
void check_request(const GenerationRequest& r, size_t index, const LlamaConfig& cfg) {
  const std::string who = "request " + std::to_string(index);
  r.params.validate(cfg.vocab_size);
  if (r.params.n != 1) throw std::invalid_argument("OfflineEngine takes n = 1 requests; fan out n as seed + i");
  if (r.prompt_token_ids.empty()) throw std::invalid_argument(who + ": empty prompt");
  if (int(r.prompt_token_ids.size()) >= cfg.max_seq_len)
    throw std::invalid_argument(who + ": prompt of " + std::to_string(r.prompt_token_ids.size()) +
                                " tokens leaves no room in the context of " + std::to_string(cfg.max_seq_len));
  for (int t : r.prompt_token_ids)
    if (t < 0 || t >= cfg.vocab_size)
      throw std::invalid_argument(who + ": token id " + std::to_string(t) + " outside the vocabulary");
}

// Every KV group's table covers the whole request (a sliding window's gives blocks back, never needs more).
int blocks_for(const GenerationRequest& r, const LlamaConfig& cfg, int block_size, int num_kv_groups) {
  const int longest = std::min(int(r.prompt_token_ids.size()) + r.params.max_tokens, cfg.max_seq_len);
  return (longest + block_size - 1) / block_size * num_kv_groups;
}

}  // namespace

OfflineEngine::OfflineEngine(LlamaModel& model, EngineOptions options) : model_(model), options_(std::move(options)) {
  if (options_.max_num_batched_tokens < 1) throw std::invalid_argument("max_num_batched_tokens must be at least 1");
  if (options_.block_size < 1) throw std::invalid_argument("block_size must be at least 1");
  if (options_.num_kv_blocks < 0) throw std::invalid_argument("num_kv_blocks must be 0 (auto) or positive");
}

OfflineEngine::~OfflineEngine() = default;

std::vector<GenerationResult> OfflineEngine::generate(const std::vector<GenerationRequest>& requests,
                                                      const std::function<void(int, int)>& on_token) {
  const LlamaConfig& cfg = model_.config();
  const KvCacheLayout layout = KvCacheLayout::for_model(cfg);
  int blocks_for_all = 0, largest = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    check_request(requests[i], i, cfg);
    const int blocks = blocks_for(requests[i], cfg, options_.block_size, layout.num_groups());
    blocks_for_all += blocks;
    largest = std::max(largest, blocks);
  }
  SchedulerConfig sc;
  sc.max_num_batched_tokens = options_.max_num_batched_tokens;
  sc.max_num_seqs = std::max<int>(1, int(requests.size()));
  sc.max_model_len = cfg.max_seq_len;
  sc.long_prefill_token_threshold = options_.long_prefill_token_threshold;
  sc.max_waiting = std::max<int>(1, int(requests.size()));
  sc.block_size = options_.block_size;
  const bool null_block = layout.has_sliding_window();  // the pool reserves one
  sc.num_kv_blocks =
      options_.num_kv_blocks > 0 ? options_.num_kv_blocks : std::max(1, blocks_for_all) + (null_block ? 1 : 0);
  sc.enable_prefix_caching = false;  // a fresh pool per call: nothing carries over from an earlier one
  sc.eos_token_ids = options_.stop_token_ids;
  sc.vocab_size = cfg.vocab_size;
  if (largest > sc.num_kv_blocks - (null_block ? 1 : 0))
    throw std::invalid_argument("a request needs " + std::to_string(largest) + " KV blocks but the cache has " +
                                std::to_string(sc.num_kv_blocks));
  core_.reset();
  core_ = std::make_unique<EngineCore>(model_, sc);

  std::vector<GenerationResult> results(requests.size());
  std::random_device entropy;
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    results[i].seed = r.params.seed ? *r.params.seed : (uint64_t(entropy()) << 32 | entropy());
    core_->add_request(Request(std::to_string(i), r.prompt_token_ids, r.params, results[i].seed));
  }
  while (core_->has_unfinished_requests())
    for (const EngineCoreOutput& o : core_->step()) {
      if (!o.error.empty()) throw std::runtime_error("request " + o.req_id + " failed: " + o.error);
      const int index = std::stoi(o.req_id);
      GenerationResult& out = results[size_t(index)];
      for (int t : o.new_token_ids) {
        out.output_token_ids.push_back(t);
        if (on_token) on_token(index, t);
      }
      if (o.finished()) out.finish = o.finish_reason;
    }
  core_->step();  // lets the runner drop the last finished rows
  return results;
}

const BlockPool& OfflineEngine::block_pool() const { return core_->scheduler().kv_cache_manager().block_pool(); }

int64_t OfflineEngine::prefill_tokens_computed() const {
  return core_ ? core_->scheduler().stats().prefill_tokens_computed : 0;
}

}  // namespace parley
