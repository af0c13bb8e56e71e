// CUDA RoPE: one thread per rotated pair (token, head, i), in the adjacent-pair (llama2.c) or the NeoX
// half layout, with the CPU reference's RopeSpec (partial rotary, frequency factors, linear scaling, YaRN) and
// its cos and sin (cpu::rope_cos_sin), so both rotate bit for bit alike.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/cpu/ops.hpp"
#include "kernels/host_device.hpp"
#include "kernels/rope_layout.hpp"

namespace parley::cuda::body {

PARLEY_HD inline int rotary_dims(const cpu::RopeSpec& spec, int head_dim) {
  return spec.rot_dims > 0 ? spec.rot_dims : head_dim;
}

// i indexes [M][n_heads][rotary_dims / 2]; spec.freq_factors points into device memory.
PARLEY_HD inline void rope_at(float* x, const int* positions, int n_heads, int head_dim, cpu::RopeSpec spec,
                              int64_t i) {
  const int rot = rotary_dims(spec, head_dim), half = rot / 2;
  const int64_t pair = i % half, head = i / half;  // head counts (token, head) rows
  const int64_t m = head / n_heads;
  float* h = x + head * head_dim;
  float c, s;
  cpu::rope_cos_sin(spec, positions[m], int(pair), rot, &c, &s);
  const int64_t a = spec.layout == RopeLayout::Adjacent ? 2 * pair : pair;
  const int64_t b = spec.layout == RopeLayout::Adjacent ? 2 * pair + 1 : pair + half;
  const float v0 = h[a], v1 = h[b];
  h[a] = v0 * c - v1 * s;
  h[b] = v0 * s + v1 * c;
}

}  // namespace parley::cuda::body
