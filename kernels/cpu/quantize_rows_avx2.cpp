// The activation rows' quantization with AVX2 (built with -mavx2 -mfma -mf16c; called only where the CPU has
// them). The same IEEE operations as the scalar encoders in qmatmul.cpp, 8 lanes at a time, with their rounding
// (q8_0: std::round's ties away from zero; q8_K: ggml's nearest_int, ties to even), so the bytes are theirs.
#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/qmatmul_kernels.hpp"

namespace parley::cpu::qmm {
namespace {

__m256 magnitude(__m256 v) { return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff))); }

float max_of(__m256 v) {  // exact in any order
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

int32_t sum_of(__m256i v) {  // integer: exact in any order
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 1)));
}

// std::round: truncate, then step away from zero where the dropped fraction is at least one half (exact: |v| < 2^23).
__m256i round_away(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 up = _mm256_cmp_ps(magnitude(_mm256_sub_ps(v, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 step =
      _mm256_or_ps(_mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN))), _mm256_set1_ps(1.0f));
  return _mm256_cvttps_epi32(_mm256_add_ps(t, _mm256_and_ps(up, step)));
}

// 32 int32 quants in [-128, 127] stored as bytes, in order (the packs interleave 128-bit lanes; the permute undoes it).
void store_bytes(int8_t* out, __m256i q0, __m256i q1, __m256i q2, __m256i q3) {
  const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

}  // namespace

void quantize_row_q8_0_avx2(const float* x, int K, int8_t* qs, float* d, int32_t* sums, float* offsets) {
  for (int b = 0; b < K / 32; ++b, x += 32, qs += 32) {
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
    const float amax = max_of(_mm256_max_ps(_mm256_max_ps(magnitude(v[0]), magnitude(v[1])),
                                            _mm256_max_ps(magnitude(v[2]), magnitude(v[3]))));
    const float scale = amax / 127.0f, inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
    const __m256 inv = _mm256_set1_ps(inverse);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) q[i] = round_away(_mm256_mul_ps(v[i], inv));
    store_bytes(qs, q[0], q[1], q[2], q[3]);
    const int32_t sum = sum_of(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    d[b] = scale, sums[b] = sum;
    if (offsets) offsets[b] = scale * static_cast<float>(sum);
  }
}

void quantize_row_q8_K_avx2(const float* x, int K, int8_t* qs, float* d, int32_t* bsums) {
  for (int b = 0; b < K / 256; ++b, x += 256, qs += 256, bsums += 16) {
    __m256 m = _mm256_setzero_ps();
    for (int j = 0; j < 256; j += 8) m = _mm256_max_ps(m, magnitude(_mm256_loadu_ps(x + j)));
    const float amax = max_of(m);
    if (amax == 0.0f) {  // the scalar encoder's all-zero block
      for (int j = 0; j < 256; j += 32) _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + j), _mm256_setzero_si256());
      for (int j = 0; j < 16; ++j) bsums[j] = 0;
      d[b] = 0.0f;
      continue;
    }
    int first = 0;  // the scalar encoder's max: the first element of the largest magnitude, with its sign
    while (std::fabs(x[first]) != amax) ++first;
    const float iscale = -127.0f / x[first];
    const __m256 is = _mm256_set1_ps(iscale);
    auto quants = [&](int j) {  // elements 8j .. 8j + 7, ties to even, at most 127
      const __m256 p = _mm256_mul_ps(is, _mm256_loadu_ps(x + 8 * j));
      return _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_round_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)),
                              _mm256_set1_epi32(127));
    };
    for (int j = 0; j < 32; j += 4) {
      const __m256i q0 = quants(j), q1 = quants(j + 1), q2 = quants(j + 2), q3 = quants(j + 3);
      store_bytes(qs + 8 * j, q0, q1, q2, q3);
      bsums[j / 2] = sum_of(_mm256_add_epi32(q0, q1)), bsums[j / 2 + 1] = sum_of(_mm256_add_epi32(q2, q3));
    }
    d[b] = 1 / iscale;
  }
}

}  // namespace parley::cpu::qmm
