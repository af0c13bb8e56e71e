// AVX2+FMA kernels (compiled with -mavx2 -mfma; only called when the CPU reports both).
#include <immintrin.h>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/simd_impl.hpp"

namespace parley::cpu {
namespace {

struct Avx2 {
  using T = __m256;
  static constexpr int W = 8;
  static constexpr int MR = 6;  // 6 rows x 2 vectors: 12 accumulators + 2 w + 1 broadcast of the 16 ymm
  static T zero() { return _mm256_setzero_ps(); }
  static T set1(float a) { return _mm256_set1_ps(a); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static float hsum(T v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace

SimdKernels avx2_kernels() {
  return {Isa::Avx2, &simd::matmul<Avx2>, &simd::dot<Avx2>, &simd::axpy<Avx2>,
          &simd::fma_probe<Avx2>, Avx2::W};
}

}  // namespace parley::cpu
