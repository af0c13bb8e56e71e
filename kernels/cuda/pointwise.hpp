// CUDA elementwise ops the architectures add, one thread per value: a bias added to every row (Qwen2's
// Q/K/V), a scale (Gemma's embeddings) and soft-capping (Gemma 2's final logits), as the CPU forward does them.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/host_device.hpp"

namespace parley::cuda::body {

// i indexes [rows][width]: y[i] += bias[i % width].
PARLEY_HD inline void add_bias_at(float* y, const float* bias, int width, int64_t i) { y[i] += bias[i % width]; }

PARLEY_HD inline void scale_at(float* x, float scale, int64_t i) { x[i] *= scale; }

// cap * tanh(x / cap); cap > 0.
PARLEY_HD inline float softcap(float x, float cap) { return cap * tanhf(x / cap); }
PARLEY_HD inline void softcap_at(float* x, float cap, int64_t i) { x[i] = softcap(x[i], cap); }

}  // namespace parley::cuda::body
