// CUDA RoPE: one thread per rotated pair (token, head, i), in the adjacent-pair (llama2.c) or the NeoX
// half layout, with the frequencies computed in float as the CPU reference does.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/host_device.hpp"
#include "model/llama_config.hpp"

namespace parley::cuda::body {

// i indexes [M][n_heads][head_dim / 2].
PARLEY_HD inline void rope_at(float* x, const int* positions, int n_heads, int head_dim, float theta, RopeLayout layout,
                              int64_t i) {
  const int half = head_dim / 2;
  const int64_t pair = i % half, head = i / half;  // head counts (token, head) rows
  const int64_t m = head / n_heads;
  float* h = x + head * head_dim;
  const float freq = 1.0f / powf(theta, float(2 * pair) / float(head_dim));
  const float val = float(positions[m]) * freq;
  const float c = cosf(val), s = sinf(val);
  const int64_t a = layout == RopeLayout::Adjacent ? 2 * pair : pair;
  const int64_t b = layout == RopeLayout::Adjacent ? 2 * pair + 1 : pair + half;
  const float v0 = h[a], v1 = h[b];
  h[a] = v0 * c - v1 * s;
  h[b] = v0 * s + v1 * c;
}

}  // namespace parley::cuda::body
