// Per-request sampling parameters (the subset of vLLM's SamplingParams implemented so far).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace parley {

struct SamplingParams {
  int n = 1;                 // samples per prompt; sample i uses seed + i
  float temperature = 1.0f;  // below 1e-5 means greedy, as vLLM's _SAMPLING_EPS
  int top_k = -1;            // -1 (or 0) keeps every token
  float top_p = 1.0f;        // nucleus mass in (0, 1]
  float min_p = 0.0f;        // drop tokens below min_p * the top probability
  std::optional<uint64_t> seed;
  int max_tokens = 16;
  bool ignore_eos = false;

  bool greedy() const { return temperature < 1e-5f; }
  // Throws std::invalid_argument with vLLM's wording for the first invalid field.
  void validate() const;
};

}  // namespace parley
