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
  static T load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static T load_bf16(const uint16_t* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static float hsum(T v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

void to_f16(const float* x, uint16_t* out, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  simd::to_f16_scalar(x + i, out + i, n - i);
}

}  // namespace

SimdKernels avx2_kernels() { return simd::make_kernels<Avx2>(Isa::Avx2, &to_f16); }

}  // namespace parley::cpu
