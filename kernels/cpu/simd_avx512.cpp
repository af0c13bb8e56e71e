// AVX-512F kernels (compiled with -mavx512f; only called when the CPU reports AVX-512F).
#include <immintrin.h>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/simd_impl.hpp"

namespace parley::cpu {
namespace {

struct Avx512 {
  using T = __m512;
  static constexpr int W = 16;
  static constexpr int MR = 12;  // 12 rows x 1 vector: 12 accumulators + 1 w + 1 broadcast of the 32 zmm
  static T zero() { return _mm512_setzero_ps(); }
  static T set1(float a) { return _mm512_set1_ps(a); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  // A fixed tree: halves, then quarters, then the AVX2-style 128-bit reduction.
  static float hsum(T v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v),
                                   _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace

SimdKernels avx512_kernels() {
  return {Isa::Avx512, &simd::matmul<Avx512>, &simd::dot<Avx512>, &simd::axpy<Avx512>,
          &simd::fma_probe<Avx512>, Avx512::W};
}

}  // namespace parley::cpu
