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
  static T load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static T load_bf16(const uint16_t* p) {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
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

void to_f16(const float* x, uint16_t* out, int n) {
  int i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  simd::to_f16_scalar(x + i, out + i, n - i);
}

}  // namespace

SimdKernels avx512_kernels() { return simd::make_kernels<Avx512>(Isa::Avx512, &to_f16); }

}  // namespace parley::cpu
