// The activation rows' quantization with AVX-512 (built with the AVX-512 flags; called only where the CPU has
// them). The same IEEE operations as the scalar encoders in qmatmul.cpp, 16 lanes at a time, with their rounding
// (q8_0: std::round's ties away from zero; q8_K: ggml's nearest_int, ties to even), so the bytes are theirs.
#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/qmatmul_kernels.hpp"

namespace parley::cpu::qmm {
namespace {

__m512 magnitude(__m512 v) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)));
}

// std::round: truncate, then step away from zero where the dropped fraction is at least one half (exact: |v| < 2^23).
__m512i round_away(__m512 v) {
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __mmask16 up = _mm512_cmp_ps_mask(magnitude(_mm512_sub_ps(v, t)), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 step =
      _mm512_castsi512_ps(_mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN)),
                                          _mm512_castps_si512(_mm512_set1_ps(1.0f))));
  return _mm512_cvttps_epi32(_mm512_mask_add_ps(t, up, t, step));
}

}  // namespace

void quantize_row_q8_0_avx512(const float* x, int K, int8_t* qs, float* d, int32_t* sums, float* offsets) {
  for (int b = 0; b < K / 32; ++b, x += 32, qs += 32) {
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(magnitude(v0), magnitude(v1)));
    const float scale = amax / 127.0f, inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
    const __m512 inv = _mm512_set1_ps(inverse);
    const __m512i q0 = round_away(_mm512_mul_ps(v0, inv)), q1 = round_away(_mm512_mul_ps(v1, inv));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 16), _mm512_cvtepi32_epi8(q1));
    const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    d[b] = scale, sums[b] = sum;
    if (offsets) offsets[b] = scale * static_cast<float>(sum);
  }
}

void quantize_row_q8_K_avx512(const float* x, int K, int8_t* qs, float* d, int32_t* bsums) {
  for (int b = 0; b < K / 256; ++b, x += 256, qs += 256, bsums += 16) {
    __m512 m = _mm512_setzero_ps();
    for (int j = 0; j < 256; j += 16) m = _mm512_max_ps(m, magnitude(_mm512_loadu_ps(x + j)));
    const float amax = _mm512_reduce_max_ps(m);
    if (amax == 0.0f) {  // the scalar encoder's all-zero block
      _mm512_storeu_si512(qs, _mm512_setzero_si512()), _mm512_storeu_si512(qs + 64, _mm512_setzero_si512());
      _mm512_storeu_si512(qs + 128, _mm512_setzero_si512()), _mm512_storeu_si512(qs + 192, _mm512_setzero_si512());
      for (int j = 0; j < 16; ++j) bsums[j] = 0;
      d[b] = 0.0f;
      continue;
    }
    int first = 0;  // the scalar encoder's max: the first element of the largest magnitude, with its sign
    while (std::fabs(x[first]) != amax) ++first;
    const float iscale = -127.0f / x[first];
    const __m512 is = _mm512_set1_ps(iscale);
    for (int j = 0; j < 16; ++j) {
      const __m512 p = _mm512_mul_ps(is, _mm512_loadu_ps(x + 16 * j));
      const __m512i q =
          _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_roundscale_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)),
                           _mm512_set1_epi32(127));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 16 * j), _mm512_cvtepi32_epi8(q));
      bsums[j] = _mm512_reduce_add_epi32(q);
    }
    d[b] = 1 / iscale;
  }
}

}  // namespace parley::cpu::qmm
