// What the sampler needs for every row of the persistent batch (vLLM v1's SamplingMetadata). The input
// batch rebuilds it only when rows are added, removed or moved; the token history is referenced, so the
// tokens appended each step are seen by penalties and min_tokens without a rebuild.
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "engine/sampling_params.hpp"

namespace parley {
namespace structured {
class StructuredOutputGrammar;
}

struct SamplingMetadata {
  // Per row, in batch order; copied from the batch when it changed.
  std::vector<float> temperature;
  std::vector<int> top_k;    // <= 0: off
  std::vector<float> top_p;  // 1: off
  std::vector<float> min_p;  // 0: off
  std::vector<float> presence_penalties, frequency_penalties, repetition_penalties;
  std::vector<int> min_tokens;
  std::vector<uint64_t> seeds;
  std::vector<int> num_logprobs;  // -1: the request asked for none
  // Whether the device's kernel may draw the row: it uses no field kSamplingFields leaves to the host.
  std::vector<uint8_t> device_can_sample;
  // Per row, pointing into the batch's rows (null: nothing to apply).
  std::vector<const std::vector<std::pair<int, float>>*> logit_bias;
  std::vector<const std::vector<int>*> min_tokens_stop_ids;    // stop_token_ids, plus EOS unless ignore_eos
  std::vector<structured::StructuredOutputGrammar*> grammars;  // a structured output's matcher (null: none)

  // Derived from the batch's rows, as vLLM's request-id sets.
  bool all_greedy = true, all_random = false;
  bool no_top_k = true, no_top_p = true, no_min_p = true;
  bool no_penalties = true, no_logit_bias = true, no_min_tokens = true;
  int max_num_logprobs = -1;  // -1: no row wants logprobs

  // The batch's token rows, referenced (penalties and min_tokens read them): row r holds num_tokens[r] tokens, the
  // first num_prompt_tokens[r] of them the prompt, starting at token_ids + r * token_stride.
  const int* token_ids = nullptr;
  int64_t token_stride = 0;
  const int* num_tokens = nullptr;
  const int* num_prompt_tokens = nullptr;

  int num_reqs() const { return int(temperature.size()); }
  std::span<const int> prompt_token_ids(int row) const {
    return {token_ids + row * token_stride, size_t(num_prompt_tokens[row])};
  }
  std::span<const int> output_token_ids(int row) const {
    return {token_ids + row * token_stride + num_prompt_tokens[row], size_t(num_tokens[row] - num_prompt_tokens[row])};
  }
};

}  // namespace parley
