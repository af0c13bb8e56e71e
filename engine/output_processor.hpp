// Turns the engine's per-step token news into what clients see (vLLM v1's OutputProcessor): incremental
// detokenization, stop strings (a possible partial match is held back until it resolves), finish
// reasons and stop_reason. Pure logic: the output actor is a shell over it.
#pragma once
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/outputs.hpp"
#include "engine/request_output.hpp"
#include "model/tokenizer.hpp"

namespace parley {

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
