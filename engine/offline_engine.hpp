// Offline generation: runs many requests to completion in shared forward passes, each step
// schedule -> run -> postprocess. (The serving scheduler with preemption and prefix caching
// replaces the simple all-admitted policy here.)
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "engine/block_pool.hpp"
#include "engine/request.hpp"
#include "engine/sampler.hpp"
#include "engine/sampling_params.hpp"
#include "model/kv_cache.hpp"
#include "model/llama.hpp"

namespace parley {

struct GenerationRequest {
  std::vector<int> prompt_token_ids;
  SamplingParams params;  // n must be 1 here: callers fan out n > 1 as seed + i
};

struct GenerationResult {
  std::vector<int> output_token_ids;  // includes the stop token that ended it, as vLLM does
  FinishReason finish = FinishReason::None;
  uint64_t seed = 0;                  // the seed used (drawn at admission when none was given)
};

struct EngineOptions {
  int block_size = 16;
  int num_kv_blocks = 0;              // 0: sized per generate() call to hold every request's whole run
  int max_num_batched_tokens = 2048;  // tokens per forward pass
  int long_prefill_token_threshold = 0;  // > 0: a prefill chunk takes at most this many tokens
  std::vector<int> stop_token_ids;    // ends a sequence unless ignore_eos (EOS and, for llama2.c models, BOS)
};

class OfflineEngine {
 public:
  OfflineEngine(LlamaModel& model, EngineOptions options);
  ~OfflineEngine();

  // on_token(request_index, token) is called for each token as soon as it is sampled.
  std::vector<GenerationResult> generate(const std::vector<GenerationRequest>& requests,
                                         const std::function<void(int, int)>& on_token = {});
  // The pool of the last generate() call (empty before the first).
  const BlockPool& block_pool() const { return *pool_; }
  int64_t prefill_tokens_computed() const { return prefill_tokens_; }

 private:
  struct Run;
  void schedule(Run& run, ForwardBatch& batch);
  void postprocess(Run& run, const std::vector<float>& logits, std::vector<GenerationResult>& results,
                   const std::function<void(int, int)>& on_token);

  LlamaModel& model_;
  EngineOptions options_;
  std::optional<KvCache> kv_;
  std::optional<BlockPool> pool_;
  Sampler sampler_;
  int64_t prefill_tokens_ = 0;
};

}  // namespace parley
