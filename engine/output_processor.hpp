// Turns the engine's per-step token news into what clients see (vLLM v1's OutputProcessor): incremental
// detokenization, stop strings (a possible partial match is held back until it resolves), finish
// reasons and stop_reason. Pure logic: the output actor is a shell over it.
#pragma once
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "engine/outputs.hpp"
#include "model/tokenizer.hpp"

namespace parley {

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

class OutputProcessor {
 public:
  explicit OutputProcessor(const Tokenizer& tokenizer);
  ~OutputProcessor();  // out of line: RequestState is complete only in the .cpp
  OutputProcessor(OutputProcessor&&) noexcept;
  OutputProcessor& operator=(OutputProcessor&&) noexcept;

  // Registers a request before its first output. Throws std::invalid_argument for a duplicate id.
  void add_request(const std::string& req_id, const std::vector<int>& prompt_token_ids, const SamplingParams& params);

  struct Processed {
    std::vector<RequestOutput> outputs;      // one per input EngineCoreOutput of a known request
    std::vector<std::string> reqs_to_abort;  // stopped here by a stop string: the scheduler must drop them
  };
  // Outputs for unknown ids (already aborted here) are skipped. Finished requests are forgotten.
  Processed process_outputs(const std::vector<EngineCoreOutput>& outputs);

  // Client cancel or disconnect: forgets the request and returns its final `abort` output (empty text),
  // or nothing if the id is unknown (already finished).
  std::optional<RequestOutput> abort_request(const std::string& req_id);

  int num_unfinished() const;
  bool has_request(const std::string& req_id) const;

 private:
  struct RequestState;
  const Tokenizer* tokenizer_;
  std::unordered_map<std::string, RequestState> states_;
};

}  // namespace parley
