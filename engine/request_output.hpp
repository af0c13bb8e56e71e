// What a client receives of one request after a step (vLLM's RequestOutput): small value types that the HTTP
// layer reads through engine/engine_client.hpp, apart from the scheduler's and the output processor's headers.
#pragma once
#include <string>
#include <variant>
#include <vector>

#include "engine/token_logprobs.hpp"

namespace parley {

enum class FinishReason { None, Stop, Length, Abort };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "abort", or null-ish "none"

// None, the stop token id, or the stop string that ended the request (OpenAI/vLLM `stop_reason`).
using StopReason = std::variant<std::monostate, int, std::string>;

// One request's delta after one step.
struct RequestOutput {
  std::string req_id;
  std::vector<int> token_ids;                  // tokens new in this delta (all of them, even if text is held back)
  std::string text;                            // text new in this delta: never a split UTF-8 sequence, never
                                               // text that might still turn out to be part of a stop string
  std::vector<TokenLogprobs> logprobs;         // one per token_ids entry when the request asked for logprobs
  std::vector<TokenLogprobs> prompt_logprobs;  // with the first delta, when the request asked: prompt tokens 1..
  FinishReason finish_reason = FinishReason::None;
  StopReason stop_reason;
  int num_prompt_tokens = 0;
  int num_output_tokens = 0;  // cumulative, including this delta
  int num_cached_tokens = 0;
  std::string error;             // with finish Abort: the engine failed the request (not the client); why
  std::vector<float> embedding;  // a pooling request's vector, with its finish

  bool finished() const { return finish_reason != FinishReason::None; }
};

}  // namespace parley
