// Prompt-lookup drafting (vLLM's NgramProposer): find the longest suffix of the context, between min_n and
// max_n tokens, that occurred earlier in it (its earliest occurrence, which may overlap the suffix), and
// draft the tokens that followed that occurrence, at most k and never past max_model_len.
#pragma once
#include <span>
#include <vector>

namespace parley {

class NgramProposer {
 public:
  // Throws std::invalid_argument unless 1 <= min_n <= max_n, k >= 1 and max_model_len >= 1.
  NgramProposer(int min_n, int max_n, int k, int max_model_len);

  // Up to k drafts to follow `context` (prompt then output); empty when no suffix of min_n or more tokens
  // occurred before, or the context already fills the model.
  std::vector<int> propose(std::span<const int> context) const;

  int k() const { return k_; }

 private:
  int min_n_, max_n_, k_, max_model_len_;
};

}  // namespace parley
