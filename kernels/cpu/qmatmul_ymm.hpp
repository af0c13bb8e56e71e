// The per-column int32 and float operations of the quantized matmul on 8-lane ymm registers, shared by the
// AVX2 and AVX-512 policies (included by TUs built with at least -mavx2 -mfma -mf16c; internal linkage).
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace parley::cpu::qmm {
namespace {

struct YmmColumns {
  using Cols = __m256i;
  using Pairs = __m256i;  // int16 lanes 2c, 2c + 1: column c's factors for two sub-blocks
  using F = __m256;

  static Pairs pairs_u8(const uint8_t* p) {
    const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8));
    return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b));
  }
  static Pairs pairs_s8(const int8_t* p) {
    const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8));
    return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a, b));
  }
  // Column c: first * a + second * b, a and b the int16 halves of `both` (low first; QuantizedRows' pairs).
  static Cols madd_pairs(Pairs p, int32_t both) { return _mm256_madd_epi16(p, _mm256_set1_epi32(both)); }
  static Cols set1(int32_t a) { return _mm256_set1_epi32(a); }
  static Cols add(Cols a, Cols b) { return _mm256_add_epi32(a, b); }
  static Cols sub(Cols a, Cols b) { return _mm256_sub_epi32(a, b); }
  static Cols shl5(Cols a) { return _mm256_slli_epi32(a, 5); }
  static Cols shl2(Cols a) { return _mm256_slli_epi32(a, 2); }

  static F fzero() { return _mm256_setzero_ps(); }
  static F fset1(float a) { return _mm256_set1_ps(a); }
  static F to_float(Cols a) { return _mm256_cvtepi32_ps(a); }
  static F half8(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  // 8 E8M0 bytes as 2^(e - 128) (ggml's GGML_E8M0_TO_FP32_HALF: subnormal below e = 2).
  static F e8m0x8(const uint8_t* p) {
    const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(tiny, normal, _mm256_cmpgt_epi32(e, _mm256_set1_epi32(1))));
  }
  static __m128i table16(const int8_t* t) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(t)); }
  static Cols cols_s8(const int8_t* p) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  static Cols mullo(Cols a, Cols b) { return _mm256_mullo_epi32(a, b); }
  static F bf16x8(const uint8_t* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fma(F a, F b, F acc) { return _mm256_fmadd_ps(a, b, acc); }
  static F fnma(F a, F b, F acc) { return _mm256_fnmadd_ps(a, b, acc); }
  static void store(float* out, F a, int cols) {
    if (cols == 8) return _mm256_storeu_ps(out, a);
    alignas(32) float tmp[8];
    _mm256_store_ps(tmp, a);
    std::copy_n(tmp, cols, out);
  }
};

}  // namespace
}  // namespace parley::cpu::qmm
