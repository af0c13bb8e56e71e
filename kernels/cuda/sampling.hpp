// CUDA sampling: one thread per logits row. Greedy rows take the argmax (lowest id on ties); the others
// sample softmax(logits / temperature), cut below min_p times the top probability, by inverse CDF in id
// order with the request's Philox uniform for (seed, position): the CPU Sampler's draw (engine/sampler.cpp)
// for rows using no field that kSamplingFields (engine/sampling_params.hpp) leaves to the host, in the same
// arithmetic (kernels/sampling_math.hpp).
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/philox.hpp"
#include "kernels/host_device.hpp"
#include "kernels/sampling_math.hpp"

namespace parley::cuda::body {

struct SampleParams {
  float temperature;  // < 1e-5: greedy
  float min_p;        // 0: off
  uint64_t seed;
  int64_t position;  // the index of the token being sampled
};

PARLEY_HD inline int sample_row(const float* logits, int vocab, SampleParams p) {
  if (p.temperature < 1e-5f) return sampling::argmax(logits, vocab);
  const float inv_t = 1.0f / p.temperature;
  const float max_logit = sampling::mul_rn(sampling::max_value(logits, vocab), inv_t);
  // Weights are recomputed in each pass (same arithmetic, same values) rather than stored per row.
  const auto prob = [&](int i) {
    const float e = sampling::exp_nonpositive(sampling::sub_rn(sampling::mul_rn(logits[i], inv_t), max_logit));
    return e >= p.min_p ? e : 0.0f;  // min_p times the top weight, 1
  };
  const float target = philox_uniform(p.seed, uint64_t(p.position)) * sampling::cdf_total(prob, vocab);
  const int token = sampling::inverse_cdf(prob, vocab, target);
  if (token >= 0) return token;
  const int last = sampling::last_positive(prob, vocab);  // rounding left the target at the top of the range
  return last >= 0 ? last : 0;
}

}  // namespace parley::cuda::body
