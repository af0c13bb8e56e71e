#include "engine/offline_engine.hpp"

#include <algorithm>
#include <deque>
#include <random>
#include <stdexcept>
#include <string>

namespace parley {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::None: break;
  }
  return "none";
}

namespace {

struct Sequence {
  int index = 0;
  std::vector<int> tokens;  // prompt then output
  int num_prompt = 0;
  int num_computed = 0;     // tokens whose KV is in the cache
  int blocks_needed = 0;    // reserved at admission: enough for the longest possible run
  std::vector<int> blocks;
  const SamplingParams* params = nullptr;
  uint64_t seed = 0;
};

int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace

OfflineEngine::OfflineEngine(LlamaModel& model, EngineOptions options)
    : model_(model), options_(std::move(options)) {
  if (options_.max_num_batched_tokens < 1) throw std::invalid_argument("max_num_batched_tokens must be at least 1");
  if (options_.block_size < 1) throw std::invalid_argument("block_size must be at least 1");
  if (options_.num_kv_blocks < 0) throw std::invalid_argument("num_kv_blocks must be 0 (auto) or positive");
  if (options_.num_kv_blocks > 0) {
    kv_.emplace(model_.config(), options_.num_kv_blocks, options_.block_size);
    pool_.emplace(options_.num_kv_blocks);
  }
}

std::vector<GenerationResult> OfflineEngine::generate(const std::vector<GenerationRequest>& requests,
                                                      const std::function<void(int, int)>& on_token) {
  const LlamaConfig& cfg = model_.config();
  const int bs = options_.block_size;
  std::vector<GenerationResult> results(requests.size());
  std::deque<Sequence> waiting;
  std::random_device entropy;
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    r.params.validate();
    if (r.params.n != 1) throw std::invalid_argument("OfflineEngine takes n = 1 requests; fan out n as seed + i");
    if (r.prompt_token_ids.empty()) throw std::invalid_argument("request " + std::to_string(i) + ": empty prompt");
    if (int(r.prompt_token_ids.size()) >= cfg.max_seq_len)
      throw std::invalid_argument("request " + std::to_string(i) + ": prompt of " + std::to_string(r.prompt_token_ids.size()) +
                                  " tokens leaves no room in the context of " + std::to_string(cfg.max_seq_len));
    for (int t : r.prompt_token_ids)
      if (t < 0 || t >= cfg.vocab_size) throw std::invalid_argument("request " + std::to_string(i) + ": token id " + std::to_string(t) + " outside the vocabulary");
    Sequence s;
    s.index = int(i);
    s.tokens = r.prompt_token_ids;
    s.num_prompt = int(s.tokens.size());
    s.params = &r.params;
    s.seed = r.params.seed ? *r.params.seed : (uint64_t(entropy()) << 32 | entropy());
    s.blocks_needed = ceil_div(std::min(s.num_prompt + r.params.max_tokens, cfg.max_seq_len), bs);
    results[i].seed = s.seed;
    waiting.push_back(std::move(s));
  }
  int blocks_for_all = 0;
  for (const auto& s : waiting) blocks_for_all += s.blocks_needed;
  if (options_.num_kv_blocks == 0 && (!kv_ || kv_->num_blocks() < blocks_for_all)) {
    kv_.emplace(cfg, std::max(1, blocks_for_all), bs);  // the pool is empty between calls
    pool_.emplace(kv_->num_blocks());
  }
  for (const auto& s : waiting)
    if (s.blocks_needed > pool_->num_blocks())
      throw std::invalid_argument("request " + std::to_string(s.index) + " needs " + std::to_string(s.blocks_needed) +
                                  " KV blocks but the cache has " + std::to_string(pool_->num_blocks()));

  std::vector<Sequence> running;
  int reserved = 0;  // blocks promised to running sequences but not yet allocated
  ForwardBatch batch;
  std::vector<float> logits;
  std::vector<int> sampled_rows;  // index into running for each logits row
  while (!waiting.empty() || !running.empty()) {
    // Schedule: admit in arrival order while every admitted sequence can run to its end.
    while (!waiting.empty() && pool_->num_free() - reserved >= waiting.front().blocks_needed) {
      reserved += waiting.front().blocks_needed;
      running.push_back(std::move(waiting.front()));
      waiting.pop_front();
    }
    batch = ForwardBatch{};
    sampled_rows.clear();
    int budget = options_.max_num_batched_tokens;
    int max_blocks = 1;
    for (auto& s : running) max_blocks = std::max(max_blocks, s.blocks_needed);
    batch.max_blocks_per_seq = max_blocks;
    std::vector<int> scheduled(running.size(), 0);
    for (size_t r = 0; r < running.size() && budget > 0; ++r) {
      Sequence& s = running[r];
      int count = int(s.tokens.size()) - s.num_computed;  // a prefill remainder, or the 1 new token
      if (options_.long_prefill_token_threshold > 0) count = std::min(count, options_.long_prefill_token_threshold);
      count = std::min(count, budget);
      budget -= count;
      scheduled[r] = count;
      while (int(s.blocks.size()) * bs < s.num_computed + count) {
        s.blocks.push_back(pool_->allocate());
        --reserved;
      }
      const int row = int(batch.block_tables.size()) / max_blocks;
      batch.block_tables.resize(size_t(row + 1) * max_blocks, 0);
      std::copy(s.blocks.begin(), s.blocks.end(), batch.block_tables.begin() + size_t(row) * max_blocks);
      for (int p = s.num_computed; p < s.num_computed + count; ++p) {
        batch.token_ids.push_back(s.tokens[p]);
        batch.positions.push_back(p);
        batch.token_seq.push_back(row);
        batch.slot_mapping.push_back(int64_t(s.blocks[p / bs]) * bs + p % bs);
      }
      if (s.num_computed < s.num_prompt) prefill_tokens_ += std::min(count, s.num_prompt - s.num_computed);
      if (s.num_computed + count == int(s.tokens.size())) {
        batch.logits_indices.push_back(batch.num_tokens() - 1);
        sampled_rows.push_back(int(r));
      }
    }
    // Run.
    model_.forward(batch, *kv_, logits);
    // Postprocess: sample, append, check stops, free finished sequences' blocks.
    for (size_t r = 0; r < running.size(); ++r) running[r].num_computed += scheduled[r];
    for (size_t i = 0; i < sampled_rows.size(); ++i) {
      Sequence& s = running[sampled_rows[i]];
      const int position = int(s.tokens.size());
      const int token = sampler_.sample(logits.data() + i * size_t(cfg.vocab_size), cfg.vocab_size, *s.params, s.seed, position);
      s.tokens.push_back(token);
      GenerationResult& out = results[s.index];
      out.output_token_ids.push_back(token);
      if (on_token) on_token(s.index, token);
      const bool stop_token = !s.params->ignore_eos && std::find(options_.stop_token_ids.begin(), options_.stop_token_ids.end(), token) != options_.stop_token_ids.end();
      if (stop_token) out.finish = FinishReason::Stop;
      else if (int(out.output_token_ids.size()) >= s.params->max_tokens || int(s.tokens.size()) >= cfg.max_seq_len)
        out.finish = FinishReason::Length;
    }
    for (size_t r = running.size(); r-- > 0;) {
      Sequence& s = running[r];
      if (results[s.index].finish == FinishReason::None) continue;
      reserved -= s.blocks_needed - int(s.blocks.size());
      for (int b : s.blocks) pool_->free(b);
      running.erase(running.begin() + r);
    }
  }
  return results;
}

}  // namespace parley
