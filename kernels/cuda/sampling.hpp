// CUDA sampling: one thread per logits row. Greedy rows take the argmax (lowest id on ties); the others
// sample softmax(logits / temperature), cut below min_p times the top probability, by inverse CDF in id
// order with the request's Philox uniform for (seed, position): the CPU Sampler's draw (engine/sampler.cpp)
// for rows without top_k, top_p, penalties, logit_bias or min_tokens (those stay on the host).
#pragma once
#include <cmath>
#include <cstdint>

#include "engine/philox.hpp"
#include "kernels/host_device.hpp"

namespace parley::cuda::body {

struct SampleParams {
  float temperature;  // < 1e-5: greedy
  float min_p;        // 0: off
  uint64_t seed;
  int64_t position;  // the index of the token being sampled
};

PARLEY_HD inline int argmax_row(const float* logits, int vocab) {
  int best = 0;
  float best_value = logits[0];
  for (int i = 1; i < vocab; ++i)
    if (logits[i] > best_value) best_value = logits[i], best = i;
  return best;
}

PARLEY_HD inline int sample_row(const float* logits, int vocab, SampleParams p) {
  if (p.temperature < 1e-5f) return argmax_row(logits, vocab);
  const float inv_t = 1.0f / p.temperature;
  float max_logit = -INFINITY;
  for (int i = 0; i < vocab; ++i) max_logit = fmaxf(max_logit, logits[i] * inv_t);
  float sum = 0.0f;
  for (int i = 0; i < vocab; ++i) sum += expf(logits[i] * inv_t - max_logit);
  // Probabilities are recomputed in each pass (same arithmetic, same values) rather than stored per row.
  const float cut = p.min_p > 0.0f ? p.min_p * (1.0f / sum) : 0.0f;
  float total = 0.0f;
  for (int i = 0; i < vocab; ++i) {
    const float prob = expf(logits[i] * inv_t - max_logit) / sum;
    if (prob >= cut && prob > 0.0f) total += prob;
  }
  const float target = philox_uniform(p.seed, uint64_t(p.position)) * total;
  float cum = 0.0f;
  int last = 0;
  for (int i = 0; i < vocab; ++i) {
    const float prob = expf(logits[i] * inv_t - max_logit) / sum;
    if (!(prob >= cut && prob > 0.0f)) continue;
    cum += prob;
    last = i;
    if (target < cum) return i;
  }
  return last;  // rounding left the target at the very top of the range
}

}  // namespace parley::cuda::body
