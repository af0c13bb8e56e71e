// The Avx2 vector policy of the templated kernels (simd_impl.hpp, simd_sampling.hpp), for the translation
// units compiled with AVX2+FMA (-mavx2 -mfma -mf16c). Internal linkage: each unit keeps its own copy.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace parley::cpu {
namespace {

struct Avx2 {
  using T = __m256;
  static constexpr int W = 8;
  static constexpr int MR = 6;                // 6 rows x 2 vectors: 12 accumulators + 2 w + 1 broadcast of the 16 ymm
  static constexpr int kSumAccumulators = 8;  // value accumulators the weighted sum keeps in registers
  static T zero() { return _mm256_setzero_ps(); }
  static T set1(float a) { return _mm256_set1_ps(a); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static T sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T div(T a, T b) { return _mm256_div_ps(a, b); }
  static T max(T a, T b) { return _mm256_max_ps(a, b); }
  static T round(T a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n for integral n in [-126, 127]: n + 127 in the exponent field.
  static T pow2(T n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  static T zero_below(T x, T lo, T v) { return _mm256_and_ps(_mm256_cmp_ps(x, lo, _CMP_GE_OQ), v); }
  // Bit l set where lane l of a equals lane l of b.
  static unsigned eq_mask(T a, T b) { return unsigned(_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_EQ_OQ))); }
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
  // Lane k = hsum(a[k]) by hsum's tree (lane l + l^4, then l^2, l^1), 8 sums at once.
  static T hsum_each(const T* a) {
    auto halves = [](T x, T y) {  // [x_l + x_l+4 | y_l + y_l+4]
      return _mm256_add_ps(_mm256_permute2f128_ps(x, y, 0x20), _mm256_permute2f128_ps(x, y, 0x31));
    };
    auto pairs = [](T x, T y) {  // per 128 bits: lanes l + l^2 of x's then y's
      return _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(x), _mm256_castps_pd(y))),
                           _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(x), _mm256_castps_pd(y))));
    };
    auto singles = [](T x, T y) {  // per 128 bits: lanes l + l^1
      return _mm256_add_ps(_mm256_shuffle_ps(x, y, _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm256_shuffle_ps(x, y, _MM_SHUFFLE(3, 1, 3, 1)));
    };
    // The operand order that leaves key k in lane k.
    return singles(pairs(halves(a[0], a[4]), halves(a[1], a[5])), pairs(halves(a[2], a[6]), halves(a[3], a[7])));
  }
};

}  // namespace
}  // namespace parley::cpu
