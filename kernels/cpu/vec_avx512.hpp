// The Avx512 vector policy of the templated kernels (simd_impl.hpp, simd_sampling.hpp), for the translation
// units compiled with AVX-512F (-mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c). Internal linkage: each unit
// keeps its own copy.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace parley::cpu {
namespace {

struct Avx512 {
  using T = __m512;
  static constexpr int W = 16;
  static constexpr int MR = 12;                // 12 rows x 1 vector: 12 accumulators + 1 w + 1 broadcast of the 32 zmm
  static constexpr int kSumAccumulators = 16;  // value accumulators the weighted sum keeps in registers
  static T zero() { return _mm512_setzero_ps(); }
  static T set1(float a) { return _mm512_set1_ps(a); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static T sub(T a, T b) { return _mm512_sub_ps(a, b); }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T div(T a, T b) { return _mm512_div_ps(a, b); }
  static T max(T a, T b) { return _mm512_max_ps(a, b); }
  static T round(T a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n for integral n in [-126, 127]: n + 127 in the exponent field.
  static T pow2(T n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  static T zero_below(T x, T lo, T v) { return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ), v); }
  // Bit l set where lane l of a equals lane l of b.
  static unsigned eq_mask(T a, T b) { return unsigned(_mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ)); }
  static T load_f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static T load_bf16(const uint16_t* p) {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
  // A fixed tree: halves, then quarters, then the AVX2-style 128-bit reduction.
  static float hsum(T v) {
    const __m256 h =
        _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // Lane k = hsum(a[k]) by hsum's tree (lane l + l^8, then l^4, l^2, l^1), 16 sums at once.
  static T hsum_each(const T* a) {
    auto halves = [](T x, T y) {  // [x_l + x_l+8 | y_l + y_l+8]
      return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 2, 3, 2)));
    };
    auto quarters = [](T x, T y) {  // four 8-lane partials to four 4-lane ones
      return _mm512_add_ps(_mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_f32x4(x, y, _MM_SHUFFLE(3, 1, 3, 1)));
    };
    auto pairs = [](T x, T y) {  // per 128 bits: lanes l + l^2 of x's then y's
      return _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(x), _mm512_castps_pd(y))),
                           _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(x), _mm512_castps_pd(y))));
    };
    auto singles = [](T x, T y) {  // per 128 bits: lanes l + l^1
      return _mm512_add_ps(_mm512_shuffle_ps(x, y, _MM_SHUFFLE(2, 0, 2, 0)),
                           _mm512_shuffle_ps(x, y, _MM_SHUFFLE(3, 1, 3, 1)));
    };
    // The operand order that leaves key k in lane k.
    const T even =
        pairs(quarters(halves(a[0], a[4]), halves(a[8], a[12])), quarters(halves(a[1], a[5]), halves(a[9], a[13])));
    const T odd =
        pairs(quarters(halves(a[2], a[6]), halves(a[10], a[14])), quarters(halves(a[3], a[7]), halves(a[11], a[15])));
    return singles(even, odd);
  }
};

}  // namespace
}  // namespace parley::cpu
