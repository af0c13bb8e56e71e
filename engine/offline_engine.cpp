#include "engine/offline_engine.hpp"

#include <algorithm>
#include <deque>
#include <random>
#include <stdexcept>
#include <string>

namespace parley {

namespace {

struct Sequence {
  int index = 0;
  std::vector<int> tokens;  // prompt then output
  int num_prompt = 0;
  int num_computed = 0;     // tokens whose KV is in the cache
  int blocks_needed = 0;    // reserved at admission: enough for the longest possible run
  std::vector<KVCacheBlock*> blocks;
  const SamplingParams* params = nullptr;
  uint64_t seed = 0;
  int scheduled = 0;        // tokens in the current step
};

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Checks a request and turns it into a waiting sequence.
Sequence make_sequence(const GenerationRequest& r, int index, const LlamaConfig& cfg, int block_size,
                       std::random_device& entropy) {
  const std::string who = "request " + std::to_string(index);
  r.params.validate();
  if (r.params.n != 1) throw std::invalid_argument("OfflineEngine takes n = 1 requests; fan out n as seed + i");
  if (r.prompt_token_ids.empty()) throw std::invalid_argument(who + ": empty prompt");
  if (int(r.prompt_token_ids.size()) >= cfg.max_seq_len)
    throw std::invalid_argument(who + ": prompt of " + std::to_string(r.prompt_token_ids.size()) +
                                " tokens leaves no room in the context of " + std::to_string(cfg.max_seq_len));
  for (int t : r.prompt_token_ids)
    if (t < 0 || t >= cfg.vocab_size)
      throw std::invalid_argument(who + ": token id " + std::to_string(t) + " outside the vocabulary");
  Sequence s;
  s.index = index;
  s.tokens = r.prompt_token_ids;
  s.num_prompt = int(s.tokens.size());
  s.params = &r.params;
  s.seed = r.params.seed ? *r.params.seed : (uint64_t(entropy()) << 32 | entropy());
  s.blocks_needed = ceil_div(std::min(s.num_prompt + r.params.max_tokens, cfg.max_seq_len), block_size);
  return s;
}

}  // namespace

// The sequences of one generate() call.
struct OfflineEngine::Run {
  std::deque<Sequence> waiting;
  std::vector<Sequence> running;
  int reserved = 0;               // blocks promised to running sequences but not yet allocated
  std::vector<int> sampled_rows;  // index into running for each logits row of the step
};

OfflineEngine::OfflineEngine(LlamaModel& model, EngineOptions options)
    : model_(model), options_(std::move(options)) {
  if (options_.max_num_batched_tokens < 1) throw std::invalid_argument("max_num_batched_tokens must be at least 1");
  if (options_.block_size < 1) throw std::invalid_argument("block_size must be at least 1");
  if (options_.num_kv_blocks < 0) throw std::invalid_argument("num_kv_blocks must be 0 (auto) or positive");
  if (options_.num_kv_blocks > 0) kv_.emplace(model_.config(), options_.num_kv_blocks, options_.block_size);
}

OfflineEngine::~OfflineEngine() = default;

std::vector<GenerationResult> OfflineEngine::generate(const std::vector<GenerationRequest>& requests,
                                                      const std::function<void(int, int)>& on_token) {
  const LlamaConfig& cfg = model_.config();
  std::vector<GenerationResult> results(requests.size());
  Run run;
  std::random_device entropy;
  int blocks_for_all = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    run.waiting.push_back(make_sequence(requests[i], int(i), cfg, options_.block_size, entropy));
    results[i].seed = run.waiting.back().seed;
    blocks_for_all += run.waiting.back().blocks_needed;
  }
  if (options_.num_kv_blocks == 0 && (!kv_ || kv_->num_blocks() < blocks_for_all))
    kv_.emplace(cfg, std::max(1, blocks_for_all), options_.block_size);
  pool_.emplace(kv_->num_blocks(), /*enable_caching=*/false);  // fresh per call: nothing leaks from an earlier one
  for (const auto& s : run.waiting)
    if (s.blocks_needed > pool_->num_blocks())
      throw std::invalid_argument("request " + std::to_string(s.index) + " needs " + std::to_string(s.blocks_needed) +
                                  " KV blocks but the cache has " + std::to_string(pool_->num_blocks()));
  ForwardBatch batch;
  std::vector<float> logits;
  while (!run.waiting.empty() || !run.running.empty()) {
    schedule(run, batch);
    model_.forward(batch, *kv_, logits);
    postprocess(run, logits, results, on_token);
  }
  return results;
}

// Admits waiting sequences in arrival order while each can run to its end, then gives every running
// sequence its prefill chunk or its one decode token within the step's token budget.
void OfflineEngine::schedule(Run& run, ForwardBatch& batch) {
  const int bs = options_.block_size;
  while (!run.waiting.empty() && pool_->get_num_free_blocks() - run.reserved >= run.waiting.front().blocks_needed) {
    run.reserved += run.waiting.front().blocks_needed;
    run.running.push_back(std::move(run.waiting.front()));
    run.waiting.pop_front();
  }
  batch = ForwardBatch{};
  run.sampled_rows.clear();
  int max_blocks = 1;
  for (const auto& s : run.running) max_blocks = std::max(max_blocks, s.blocks_needed);
  batch.max_blocks_per_seq = max_blocks;
  int budget = options_.max_num_batched_tokens;
  for (size_t r = 0; r < run.running.size(); ++r) {
    Sequence& s = run.running[r];
    int count = int(s.tokens.size()) - s.num_computed;  // a prefill remainder, or the 1 new token
    if (options_.long_prefill_token_threshold > 0) count = std::min(count, options_.long_prefill_token_threshold);
    s.scheduled = count = std::min(count, budget);
    budget -= count;
    if (count == 0) continue;
    const int new_blocks = std::max(0, ceil_div(s.num_computed + count, bs) - int(s.blocks.size()));
    for (KVCacheBlock* b : pool_->get_new_blocks(new_blocks)) s.blocks.push_back(b);
    run.reserved -= new_blocks;
    const int row = int(batch.block_tables.size()) / max_blocks;
    batch.block_tables.resize(size_t(row + 1) * max_blocks, 0);
    std::transform(s.blocks.begin(), s.blocks.end(), batch.block_tables.begin() + size_t(row) * max_blocks,
                   [](const KVCacheBlock* b) { return b->block_id; });
    for (int p = s.num_computed; p < s.num_computed + count; ++p) {
      batch.token_ids.push_back(s.tokens[p]);
      batch.positions.push_back(p);
      batch.token_seq.push_back(row);
      batch.slot_mapping.push_back(int64_t(s.blocks[p / bs]->block_id) * bs + p % bs);
    }
    if (s.num_computed < s.num_prompt) prefill_tokens_ += std::min(count, s.num_prompt - s.num_computed);
    if (s.num_computed + count == int(s.tokens.size())) {
      batch.logits_indices.push_back(batch.num_tokens() - 1);
      run.sampled_rows.push_back(int(r));
    }
  }
}

// Samples each finished row, appends its token, checks stops, and frees finished sequences' blocks.
void OfflineEngine::postprocess(Run& run, const std::vector<float>& logits, std::vector<GenerationResult>& results,
                                const std::function<void(int, int)>& on_token) {
  const LlamaConfig& cfg = model_.config();
  for (auto& s : run.running) s.num_computed += s.scheduled;
  for (size_t i = 0; i < run.sampled_rows.size(); ++i) {
    Sequence& s = run.running[run.sampled_rows[i]];
    const int position = int(s.tokens.size());
    const int token = sampler_.sample(logits.data() + i * size_t(cfg.vocab_size), cfg.vocab_size, *s.params, s.seed, position);
    s.tokens.push_back(token);
    GenerationResult& out = results[s.index];
    out.output_token_ids.push_back(token);
    if (on_token) on_token(s.index, token);
    const auto& stops = options_.stop_token_ids;
    if (!s.params->ignore_eos && std::find(stops.begin(), stops.end(), token) != stops.end())
      out.finish = FinishReason::Stop;
    else if (int(out.output_token_ids.size()) >= s.params->max_tokens || int(s.tokens.size()) >= cfg.max_seq_len)
      out.finish = FinishReason::Length;
  }
  for (size_t r = run.running.size(); r-- > 0;) {
    Sequence& s = run.running[r];
    if (results[s.index].finish == FinishReason::None) continue;
    run.reserved -= s.blocks_needed - int(s.blocks.size());
    pool_->free_blocks({s.blocks.rbegin(), s.blocks.rend()});  // tail first, as vLLM frees
    run.running.erase(run.running.begin() + r);
  }
}

}  // namespace parley
