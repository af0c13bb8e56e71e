// Vectorized kernels written once over a small vector-type policy V and instantiated per ISA
// (simd_avx2.cpp, simd_avx512.cpp, simd_generic.cpp compile this with their own -m flags).
//
// Batch invariance: every output element is reduced in the same order whatever tile computes it:
// W-lane accumulation over full K chunks in ascending k, then V::hsum, then the scalar K tail.
// So a row's result never depends on M, on the tile shape, or on how threads split N.
#pragma once
#include <algorithm>
#include <cstdint>

namespace parley::cpu::simd {

constexpr int kPrefetchFloats = 256;  // 1 KiB ahead in each weight row

// MR rows of x times NR rows of w: MR*NR vector accumulators held in registers.
// "#pragma GCC unroll" keeps the MR x NR accumulators in registers; without it GCC -O2 leaves them on the stack.
template <class V, int MR, int NR>
inline void micro_tile(const float* x, const float* w, float* out, int N, int K, int m0, int n0) {
  typename V::T acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = V::zero();
  const int k_full = K - K % V::W;
  for (int k = 0; k < k_full; k += V::W) {
    typename V::T wv[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      // Weights stream from memory once per tile; asking early hides DRAM latency (helps GEMV most).
      __builtin_prefetch(w + int64_t(n0 + j) * K + k + kPrefetchFloats);
      wv[j] = V::load(w + int64_t(n0 + j) * K + k);
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const typename V::T xv = V::load(x + int64_t(m0 + i) * K + k);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) acc[i][j] = V::fma(xv, wv[j], acc[i][j]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      float s = V::hsum(acc[i][j]);
      const float* xr = x + int64_t(m0 + i) * K;
      const float* wr = w + int64_t(n0 + j) * K;
      for (int k = k_full; k < K; ++k) s += xr[k] * wr[k];
      out[int64_t(m0 + i) * N + n0 + j] = s;
    }
}

// MR rows against the columns [n_lo, n_hi): NR at a time, then single columns.
template <class V, int MR>
inline void cols_tile(const float* x, const float* w, float* out, int N, int K, int m, int n_lo, int n_hi) {
  int n = n_lo;
  for (; n + V::NR <= n_hi; n += V::NR) micro_tile<V, MR, V::NR>(x, w, out, N, K, m, n);
  for (; n < n_hi; ++n) micro_tile<V, MR, 1>(x, w, out, N, K, m, n);
}

// A block of weight rows small enough to stay in L2 is swept by every MR-row tile of x in turn,
// so each x tile is read from L1 and each weight from L2. A single row (GEMV) goes one weight row
// at a time instead: one sequential stream prefetches best.
template <class V>
void matmul(const float* x, const float* w, float* out, int M, int N, int K, int n_begin, int n_end) {
  static_assert(V::MR == 4, "the remainder switch below covers 1..3 rows");
  if (M == 1) {
    for (int n = n_begin; n < n_end; ++n) micro_tile<V, 1, 1>(x, w, out, N, K, 0, n);
    return;
  }
  const int64_t row_bytes = int64_t(K) * sizeof(float);
  const int n_block = static_cast<int>(std::max<int64_t>(1, (128 * 1024) / row_bytes / V::NR)) * V::NR;
  for (int nb = n_begin; nb < n_end; nb += n_block) {
    const int ne = std::min(n_end, nb + n_block);
    int m = 0;
    for (; m + V::MR <= M; m += V::MR) cols_tile<V, V::MR>(x, w, out, N, K, m, nb, ne);
    switch (M - m) {
      case 3: cols_tile<V, 3>(x, w, out, N, K, m, nb, ne); break;
      case 2: cols_tile<V, 2>(x, w, out, N, K, m, nb, ne); break;
      case 1: cols_tile<V, 1>(x, w, out, N, K, m, nb, ne); break;
      default: break;
    }
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
  return V::hsum(c0) + V::hsum(c1) + V::hsum(c2) + V::hsum(c3) + V::hsum(c4) + V::hsum(c5) + V::hsum(c6) +
         V::hsum(c7) + V::hsum(c8) + V::hsum(c9);
}

}  // namespace parley::cpu::simd
