// Vectorized kernels written once over a small vector-type policy V and instantiated per ISA
// (simd_avx2.cpp, simd_avx512.cpp, simd_generic.cpp compile this with their own -m flags).
//
// The matmul is an outer product over weights packed in panels of kPanel columns, [panel][k][kPanel]
// (see CpuBackend::pack). Batch invariance: every output element is one chain of multiply-adds over
// k = 0, 1, ..., K-1 starting from zero, whatever tile computes it, so a row's result never depends
// on M, on the tile shape, or on how threads split the panels.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/simd_attention.hpp"

namespace parley::cpu::simd {

constexpr int kPanel = PackedMatrix::kPanel;  // one AVX-512 or two AVX2 vectors
constexpr int kPrefetchFloats = 512;          // 2 KiB ahead in the panel stream

// MR rows of x times one panel: MR x kPanel/W vector accumulators held in registers.
// "#pragma GCC unroll" keeps them in registers; without it GCC -O2 leaves them on the stack.
template <class V, int MR>
inline void micro_tile(const float* x, const float* panel, float* out, int ldo, int K, int m0, int cols) {
  constexpr int NV = kPanel / V::W;
  typename V::T acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) acc[i][j] = V::zero();
  const float* xr = x + int64_t(m0) * K;
  for (int k = 0; k < K; ++k) {
    __builtin_prefetch(panel + int64_t(k) * kPanel + kPrefetchFloats);
    typename V::T wv[NV];
#pragma GCC unroll 16
    for (int j = 0; j < NV; ++j) wv[j] = V::load(panel + int64_t(k) * kPanel + j * V::W);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const typename V::T xb = V::set1(xr[int64_t(i) * K + k]);
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) acc[i][j] = V::fma(xb, wv[j], acc[i][j]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    float* o = out + int64_t(m0 + i) * ldo;
    if (cols == kPanel) {
#pragma GCC unroll 16
      for (int j = 0; j < NV; ++j) V::store(o + j * V::W, acc[i][j]);
    } else {  // the last panel of a matrix whose width is not a multiple of kPanel
      float tmp[kPanel];
      for (int j = 0; j < NV; ++j) V::store(tmp + j * V::W, acc[i][j]);
      std::copy_n(tmp, cols, o);
    }
  }
}

// MR rows against panels [p_begin, p_end).
template <class V, int MR>
inline void panels_tile(const float* x, const float* packed, float* out, int N, int K, int m, int p_begin, int p_end) {
  for (int p = p_begin; p < p_end; ++p)
    micro_tile<V, MR>(x, packed + int64_t(p) * K * kPanel, out + p * kPanel, N, K, m, std::min(kPanel, N - p * kPanel));
}

template <class V, int R>
inline void remainder_rows(const float* x, const float* packed, float* out, int N, int K, int m, int rows, int pb,
                           int pe) {
  if constexpr (R > 0) {
    if (rows == R) return panels_tile<V, R>(x, packed, out, N, K, m, pb, pe);
    remainder_rows<V, R - 1>(x, packed, out, N, K, m, rows, pb, pe);
  }
}

// out[M][N] for the panels [p_begin, p_end): a block of panels small enough to stay in L2 is swept
// by every MR-row tile of x in turn, so weights come from L2 and x from L1.
template <class V>
void matmul(const float* x, const float* packed, float* out, int M, int N, int K, int p_begin, int p_end) {
  const int p_block = static_cast<int>(std::max<int64_t>(1, (128 * 1024) / (int64_t(K) * kPanel * sizeof(float))));
  for (int pb = p_begin; pb < p_end; pb += p_block) {
    const int pe = std::min(p_end, pb + p_block);
    int m = 0;
    for (; m + V::MR <= M; m += V::MR) panels_tile<V, V::MR>(x, packed, out, N, K, m, pb, pe);
    remainder_rows<V, V::MR - 1>(x, packed, out, N, K, m, M - m, pb, pe);
  }
}

template <class V>
float dot(const float* a, const float* b, int n) {
  typename V::T acc = V::zero();
  const int n_full = n - n % V::W;
  for (int i = 0; i < n_full; i += V::W) acc = V::fma(V::load(a + i), V::load(b + i), acc);
  float s = V::hsum(acc);
  for (int i = n_full; i < n; ++i) s += a[i] * b[i];
  return s;
}

template <class V>
void axpy(float alpha, const float* x, float* y, int n) {
  const typename V::T av = V::set1(alpha);
  const int n_full = n - n % V::W;
  for (int i = 0; i < n_full; i += V::W) V::store(y + i, V::fma(av, V::load(x + i), V::load(y + i)));
  for (int i = n_full; i < n; ++i) y[i] += alpha * x[i];
}

// x * sigmoid(s), with e = exp(-|s|) <= 1: x / (1 + e) for s >= 0 and x * e / (1 + e) below, so exp never overflows.
template <class V>
typename V::T times_sigmoid(typename V::T x, typename V::T s) {
  using T = typename V::T;
  const T zero = V::zero(), one = V::set1(1.0f);
  const T e = exp_nonpositive<V>(V::sub(zero, V::max(s, V::sub(zero, s))));
  const T factor = V::max(e, V::zero_below(s, zero, one));  // 1 for s >= 0, else e
  return V::div(V::mul(x, factor), V::add(one, e));
}

// GELU's tanh approximation is x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): 0.5 (1 + tanh u) = sigmoid(2u).
template <class V>
typename V::T gelu_tanh(typename V::T x) {
  const typename V::T x3 = V::mul(V::mul(x, x), x);
  return times_sigmoid<V>(x, V::mul(V::set1(2.0f * 0.7978845608028654f), V::fma(V::set1(0.044715f), x3, x)));
}

// out = f(a, b) elementwise, W at a time; the last part-vector padded, so every element takes the same formula.
template <class V, class F>
void elementwise(const float* a, const float* b, float* out, int n, F f) {
  constexpr int W = V::W;
  const int full = n - n % W;
  for (int i = 0; i < full; i += W) V::store(out + i, f(V::load(a + i), V::load(b + i)));
  if (full == n) return;
  float x[W] = {}, y[W] = {}, o[W];
  std::copy(a + full, a + n, x);
  std::copy(b + full, b + n, y);
  V::store(o, f(V::load(x), V::load(y)));
  std::copy_n(o, n - full, out + full);
}

// silu(g) * u = g * sigmoid(g) * u.
template <class V>
void swiglu(const float* gate, const float* up, float* out, int n) {
  elementwise<V>(gate, up, out, n, [](auto g, auto u) { return V::mul(times_sigmoid<V>(g, g), u); });
}

// gelu_tanh(g) * u (GeGLU).
template <class V>
void geglu(const float* gate, const float* up, float* out, int n) {
  elementwise<V>(gate, up, out, n, [](auto g, auto u) { return V::mul(gelu_tanh<V>(g), u); });
}

// gelu_tanh(x) (BERT's ungated FFN); out may be x.
template <class V>
void gelu(const float* x, float* out, int n) {
  elementwise<V>(x, x, out, n, [](auto g, auto) { return gelu_tanh<V>(g); });
}

// LayerNorm of one row: the mean and the variance from W float lanes summed in a fixed order, then
// (x - mean) * scale * weight + bias. A row's bits are its own; out may be x.
template <class V>
void layernorm(const float* x, const float* weight, const float* bias, float* out, int n, float eps) {
  using T = typename V::T;
  constexpr int W = V::W;
  const int full = n - n % W;
  T acc = V::zero();
  for (int i = 0; i < full; i += W) acc = V::add(acc, V::load(x + i));
  float sum = V::hsum(acc);
  for (int i = full; i < n; ++i) sum += x[i];
  const float mean = sum / float(n);
  const T m = V::set1(mean);
  T sq = V::zero();
  for (int i = 0; i < full; i += W) {
    const T d = V::sub(V::load(x + i), m);
    sq = V::fma(d, d, sq);
  }
  float squares = V::hsum(sq);
  for (int i = full; i < n; ++i) squares = std::fma(x[i] - mean, x[i] - mean, squares);
  const float scale = 1.0f / std::sqrt(squares / float(n) + eps);
  const T s = V::set1(scale);
  for (int i = 0; i < full; i += W)
    V::store(out + i, V::fma(V::mul(V::sub(V::load(x + i), m), s), V::load(weight + i), V::load(bias + i)));
  for (int i = full; i < n; ++i) out[i] = std::fma((x[i] - mean) * scale, weight[i], bias[i]);
}

// Ten independent FMA chains in named registers hide the FMA latency, so this runs at the core's
// FMA throughput (the peak that benchmarks quote against).
template <class V>
float fma_probe(int64_t iters) {
  const typename V::T a = V::set1(0.999999f), b = V::set1(1e-7f);
  typename V::T c0 = V::set1(0.0f), c1 = V::set1(0.1f), c2 = V::set1(0.2f), c3 = V::set1(0.3f), c4 = V::set1(0.4f),
                c5 = V::set1(0.5f), c6 = V::set1(0.6f), c7 = V::set1(0.7f), c8 = V::set1(0.8f), c9 = V::set1(0.9f);
  for (int64_t it = 0; it < iters; ++it) {
    c0 = V::fma(c0, a, b), c1 = V::fma(c1, a, b), c2 = V::fma(c2, a, b), c3 = V::fma(c3, a, b), c4 = V::fma(c4, a, b);
    c5 = V::fma(c5, a, b), c6 = V::fma(c6, a, b), c7 = V::fma(c7, a, b), c8 = V::fma(c8, a, b), c9 = V::fma(c9, a, b);
  }
  return V::hsum(c0) + V::hsum(c1) + V::hsum(c2) + V::hsum(c3) + V::hsum(c4) + V::hsum(c5) + V::hsum(c6) + V::hsum(c7) +
         V::hsum(c8) + V::hsum(c9);
}

template <class V>
SimdKernels make_kernels(Isa isa, void (*to_f16)(const float*, uint16_t*, int)) {
  return {isa,           &matmul<V>,          &dot<V>, &axpy<V>,      &swiglu<V>, &geglu<V>, &gelu<V>,
          &layernorm<V>, &attention::tile<V>, to_f16,  &fma_probe<V>, V::W};
}

inline void to_f16_scalar(const float* x, uint16_t* out, int n) {
  for (int i = 0; i < n; ++i) out[i] = f32_to_f16(x[i]);
}

}  // namespace parley::cpu::simd
