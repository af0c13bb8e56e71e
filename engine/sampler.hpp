// Turns one row of logits into a token, in vLLM v1's order: greedy argmax, or temperature,
// min_p, top_k, top_p, then a draw keyed by (seed, position) so no other row can change it.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/sampling_params.hpp"

namespace parley {

int argmax(const float* logits, int vocab);  // lowest id on ties, as llama2.c

class Sampler {
 public:
  // position: the index in the sequence of the token being sampled.
  int sample(const float* logits, int vocab, const SamplingParams& params, uint64_t seed, int64_t position);

 private:
  template <class Desc>
  void apply_top_p(float top_p, int vocab, const Desc& desc);

  std::vector<float> probs_, kept_probs_;
  std::vector<int> order_, keep_;
};

}  // namespace parley
