// The sampler's arithmetic, defined once in scalar code that runs on the host and in CUDA kernels: the
// vectorized CPU kernels (kernels/cpu/simd_sampling.hpp) compute the same bits, so a row samples the same token
// on every ISA and on the device. Weights stay unnormalized (e^(logit - max), the top one exactly 1): the inverse
// CDF scales its uniform by the total mass instead, summed over blocks of 16 ids (each by a fixed tree that
// vectors follow) added in id order.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/host_device.hpp"

namespace parley::sampling {

constexpr int kBlock = 16;  // ids per block of the inverse CDF: one AVX-512 vector, two AVX2 vectors

// Operations nvcc must not fuse into an FMA (the host compiles these files with -ffp-contract=off).
PARLEY_HD inline float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
PARLEY_HD inline float sub_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
PARLEY_HD inline float round_even(float x) {
#ifdef __CUDA_ARCH__
  return rintf(x);
#else
  return __builtin_nearbyintf(x);  // the default rounding: to nearest, ties to even
#endif
}
PARLEY_HD inline float fma_rn(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return __builtin_fmaf(a, b, c);
#endif
}

// e^x for x <= 0 (0 below -87 and for NaN, exactly 1 at 0, never above 1): the vector kernels' exp_nonpositive
// with every multiply-add fused.
PARLEY_HD inline float exp_nonpositive(float x) {
  const float lo = -87.0f;
  const float xc = x > lo ? x : lo;
  const float n = round_even(mul_rn(xc, 1.44269504088896341f));
  float r = fma_rn(n, -0.693359375f, xc);  // x - n ln2 in two steps: the first is exact
  r = fma_rn(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = fma_rn(p, r, 1.3981999507e-3f);
  p = fma_rn(p, r, 8.3334519073e-3f);
  p = fma_rn(p, r, 4.1665795894e-2f);
  p = fma_rn(p, r, 1.6666665459e-1f);
  p = fma_rn(p, r, 5.0000001201e-1f);
  p = fma_rn(p, mul_rn(r, r), r) + 1.0f;
  const uint32_t bits = uint32_t(int(n) + 127) << 23;
  float pow2;
  memcpy(&pow2, &bits, sizeof pow2);
  return x >= lo ? mul_rn(p, pow2) : 0.0f;
}

// The largest value, NaNs skipped (-inf when there is none). Vectors may return -0 where this returns +0.
PARLEY_HD inline float max_value(const float* x, int n) {
  float m = -INFINITY;
  for (int i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// The first index of the largest value; 0 when x[0] is NaN (a scan keeping the first strict maximum).
PARLEY_HD inline int argmax(const float* x, int n) {
  int best = 0;
  float best_value = x[0];
  for (int i = 1; i < n; ++i)
    if (x[i] > best_value) best_value = x[i], best = i;
  return best;
}

// v[0..15] summed by halves: lanes j + j+8, then j + j+4, j + j+2, j + j+1 (the vectors' horizontal sum).
PARLEY_HD inline float tree16(const float* v) {
  float s[8];
  PARLEY_UNROLL
  for (int j = 0; j < 8; ++j) s[j] = v[j] + v[j + 8];
  PARLEY_UNROLL
  for (int j = 0; j < 4; ++j) s[j] += s[j + 4];
  return (s[0] + s[2]) + (s[1] + s[3]);
}

// out[i] = e^(x[i] * scale - shift), for x[i] * scale <= shift.
PARLEY_HD inline void exp_scaled(const float* x, int n, float scale, float shift, float* out) {
  for (int i = 0; i < n; ++i) out[i] = exp_nonpositive(sub_rn(mul_rn(x[i], scale), shift));
}

// x[i] = 0 where x[i] < cut: min_p's and top_k's cuts.
PARLEY_HD inline void zero_below(float* x, int n, float cut) {
  for (int i = 0; i < n; ++i) x[i] = x[i] >= cut ? x[i] : 0.0f;  // NaN too
}

// The mass of ids [b, b + 16) (weights at or below zero, and NaNs, count as zero), by tree16.
template <class Weight>
PARLEY_HD inline float block_mass(const Weight& w, int b, int n) {
  float v[kBlock];
  const int m = n - b < kBlock ? n - b : kBlock;
  for (int j = 0; j < m; ++j) {
    const float x = w(b + j);
    v[j] = x > 0.0f ? x : 0.0f;
  }
  for (int j = m; j < kBlock; ++j) v[j] = 0.0f;
  return tree16(v);
}

// The total mass: the blocks' masses added in id order, in Sum: float for the draw (the CUDA body's arithmetic),
// double for the logprobs' normalizer (float precision at any vocabulary).
template <class Sum = float, class Weight>
PARLEY_HD inline Sum cdf_total(const Weight& w, int n) {
  Sum total = 0;
  for (int b = 0; b < n; b += kBlock) total += block_mass(w, b, n);
  return total;
}

// Within the block at b, cum the mass before it: the first id where the running sum passes target, else the
// block's last positive id.
template <class Weight>
PARLEY_HD inline int walk_block(const Weight& w, int b, int n, float cum, float target) {
  int last = -1;
  for (int i = b; i < b + kBlock && i < n; ++i) {
    const float x = w(i);
    if (!(x > 0.0f)) continue;
    cum += x;
    last = i;
    if (target < cum) return i;
  }
  return last;
}

// The id at which target falls on the cumulative mass: blocks first, then the ids of the block it falls in,
// added one by one (when rounding keeps that walk below target, the block's last positive id). -1: no mass
// at or above target (the caller takes its last positive id).
template <class Weight>
PARLEY_HD inline int inverse_cdf(const Weight& w, int n, float target) {
  float cum = 0.0f;
  for (int b = 0; b < n; b += kBlock) {
    const float next = cum + block_mass(w, b, n);
    if (target < next) return walk_block(w, b, n, cum, target);
    cum = next;
  }
  return -1;
}

// The last id of positive weight, -1 if none.
template <class Weight>
PARLEY_HD inline int last_positive(const Weight& w, int n) {
  for (int i = n - 1; i >= 0; --i)
    if (w(i) > 0.0f) return i;
  return -1;
}

}  // namespace parley::sampling
