// The sampler's row kernels, one table per instruction set: each computes the bits of its scalar definition
// in kernels/sampling_math.hpp, so the choice of ISA never changes a sampled token.
#pragma once
#include "kernels/cpu/ops.hpp"

namespace parley::cpu {

struct SamplingKernels {
  Isa isa;
  float (*max_value)(const float* x, int n);  // NaNs skipped; -inf when there is none
  int (*argmax)(const float* x, int n);       // the first index of the largest value
  void (*exp_scaled)(const float* x, int n, float scale, float shift, float* out);  // e^(x * scale - shift)
  void (*zero_below)(float* x, int n, float cut);                                   // x < cut becomes 0
  // The inverse CDF over weights in id order (sampling::cdf_total and sampling::inverse_cdf on an array).
  float (*cdf_total)(const float* w, int n);
  double (*cdf_total_double)(const float* w, int n);        // the blocks' masses added in double: logprobs' normalizer
  int (*inverse_cdf)(const float* w, int n, float target);  // -1: target at or above the total
};

// Isa::Auto: the best this CPU runs. Throws std::invalid_argument for an ISA the CPU lacks.
SamplingKernels sampling_kernels(Isa isa = Isa::Auto);
// The best this CPU runs, chosen once for the process: for callers with no Sampler (argmax, logprobs, the draw).
const SamplingKernels& best_sampling_kernels();

}  // namespace parley::cpu
