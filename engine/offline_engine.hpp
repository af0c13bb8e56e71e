// Offline generation over EngineCore: a batch of requests run to completion, as vLLM's LLM.generate.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "engine/block_pool.hpp"
#include "engine/engine_core.hpp"
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
  uint64_t seed = 0;  // the seed used (drawn at admission when none was given)
};

struct EngineOptions {
  int block_size = 16;
  int num_kv_blocks = 0;                 // 0: sized per generate() call to hold every request's whole run
  int max_num_batched_tokens = 2048;     // tokens per forward pass
  int long_prefill_token_threshold = 0;  // > 0: a prefill chunk takes at most this many tokens
  std::vector<int> stop_token_ids;       // ends a sequence unless ignore_eos (EOS and, for llama2.c models, BOS)
};

class OfflineEngine {
 public:
  OfflineEngine(LlamaModel& model, EngineOptions options);
  ~OfflineEngine();

  // Runs every request to its end on a fresh KV pool; on_token(request_index, token) is called for each
  // token as soon as it is sampled. Throws std::invalid_argument, running nothing, if any request is bad.
  std::vector<GenerationResult> generate(const std::vector<GenerationRequest>& requests,
                                         const std::function<void(int, int)>& on_token = {});
  // The pool of the last generate() call (call generate() first).
  const BlockPool& block_pool() const;
  int64_t prefill_tokens_computed() const;

 private:
  LlamaModel& model_;
  EngineOptions options_;
  std::unique_ptr<EngineCore> core_;
};

}  // namespace parley
