// Logprobs as the engine computes them, from the raw logits (before penalties and temperature): one sampled
// position's, and a step's share of a prompt's (engine/prompt_logprobs.hpp).
#pragma once
#include <utility>
#include <vector>

namespace parley {

// The logprobs of one position: the token there (sampled, or the prompt's), its rank and the top alternatives.
struct TokenLogprobs {
  int token = 0;  // the sampled (or prompt) token
  float logprob = 0.0f;
  int rank = 0;                            // 1 + the number of tokens with a strictly higher logprob
  std::vector<std::pair<int, float>> top;  // the top `logprobs` (token, logprob), descending, ties by id
  bool operator==(const TokenLogprobs&) const = default;
};

// The logprobs one step computed for prompt tokens [first_token, first_token + entries.size()), each from the
// raw logits at the position before it (engine/prompt_logprobs.hpp).
struct PromptLogprobsChunk {
  int first_token = 0;
  std::vector<TokenLogprobs> entries;
};

}  // namespace parley
