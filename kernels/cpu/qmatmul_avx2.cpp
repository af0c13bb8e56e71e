// AVX2 kernels of the quantized matmul (built with -mavx2 -mfma -mf16c; called only where the CPU has them).
// u8 x s8 products by _mm256_maddubs_epi16: at most 8 products of a 5-bit quant (or 4 of a 6-bit one) share an
// int16 lane before _mm256_madd_epi16 widens them, so no sum saturates (8 * 31 * 127 and 4 * 63 * 127 < 2^15).
#include "kernels/cpu/qmatmul_impl.hpp"
#include "kernels/cpu/qmatmul_ymm.hpp"

namespace parley::cpu::qmm {
namespace {

struct Avx2 : YmmColumns {
  struct Bytes {
    __m256i lo, hi;
  };  // columns 0-3, 4-7
  struct I32 {
    __m256i lo, hi;
  };  // two int32 lanes per column
  struct Scale {
    __m256i lo, hi;
  };  // four int16 lanes per column, as maddubs leaves them
  static constexpr int MR = 4;
  static constexpr int MR_HALF = 8;

  static __m256i load32(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static constexpr bool kBiasedSigned = false;  // signed weights as two's complement bytes
  static Bytes load(const uint8_t* p) { return {load32(p), load32(p + 32)}; }
  static Bytes flip_sign(Bytes b) {
    const __m256i m = _mm256_set1_epi8(static_cast<char>(0x80));
    return {_mm256_xor_si256(b.lo, m), _mm256_xor_si256(b.hi, m)};
  }
  static Bytes lo_nibbles(Bytes b) {
    const __m256i m = _mm256_set1_epi8(15);
    return {_mm256_and_si256(b.lo, m), _mm256_and_si256(b.hi, m)};
  }
  static Bytes hi_nibbles(Bytes b) {
    const __m256i m = _mm256_set1_epi8(15);
    return {_mm256_and_si256(_mm256_srli_epi16(b.lo, 4), m), _mm256_and_si256(_mm256_srli_epi16(b.hi, 4), m)};
  }
  static __m256i load_fifth(const uint8_t* p) { return load32(p); }
  // Each byte (0..15) replaced by table[byte]: a 16-entry table in both 128-bit lanes for vpshufb.
  static Bytes lookup(Bytes b, const int8_t* table) {
    const __m256i t = _mm256_broadcastsi128_si256(table16(table));
    return {_mm256_shuffle_epi8(t, b.lo), _mm256_shuffle_epi8(t, b.hi)};
  }
  // Group g's two bits of each byte (bits 2g, 2g + 1) as 0..3.
  template <int Group>
  static Bytes crumbs(Bytes b) {
    const __m256i m = _mm256_set1_epi8(3);
    return {_mm256_and_si256(_mm256_srli_epi16(b.lo, 2 * Group), m),
            _mm256_and_si256(_mm256_srli_epi16(b.hi, 2 * Group), m)};
  }
  // q3_K's third bit, laid out as the fifth bits below, moved to bit 2 (16-bit shifts: what crosses a byte is masked).
  template <int Group>
  static Bytes with_bit2(Bytes b, __m256i high) {
    const __m256i m = _mm256_set1_epi8(0x04);
    const __m256i lo = Group <= 2 ? _mm256_slli_epi16(high, 2 - Group) : _mm256_srli_epi16(high, Group - 2);
    return {_mm256_or_si256(b.lo, _mm256_and_si256(lo, m)),
            _mm256_or_si256(b.hi, _mm256_and_si256(_mm256_srli_epi16(high, Group + 2), m))};
  }
  // Group g's fifth bits: bit g of byte i for columns 0-3 (bytes 0-31), bit 4 + g for columns 4-7, moved to bit 4.
  template <int Group>
  static Bytes with_bit4(Bytes b, __m256i high) {
    const __m256i m = _mm256_set1_epi8(0x10);
    return {_mm256_or_si256(b.lo, _mm256_and_si256(_mm256_slli_epi16(high, 4 - Group), m)),
            _mm256_or_si256(b.hi, _mm256_and_si256(_mm256_srli_epi16(high, Group), m))};
  }
  template <int Shift>
  static Bytes with_hi2(Bytes q, Bytes high) {
    // One shift per register at most: shifts have a single port on some AVX2 cores (Zen 1), as multiplies do.
    const __m256i m = _mm256_set1_epi8(0x30);
    auto bits = [&](__m256i h) {
      if constexpr (Shift < 4) return _mm256_and_si256(_mm256_slli_epi16(h, 4 - Shift), m);
      if constexpr (Shift > 4) return _mm256_and_si256(_mm256_srli_epi16(h, Shift - 4), m);
      return _mm256_and_si256(h, m);
    };
    return {_mm256_or_si256(q.lo, bits(high.lo)), _mm256_or_si256(q.hi, bits(high.hi))};
  }

  // int16 pair sums of n groups against the row's 8n activation bytes.
  template <int n>
  static Bytes products(const Bytes* g, const int8_t* x) {
    const __m256i x0 = _mm256_set1_epi64x(load_i64(x));
    Bytes sum{_mm256_maddubs_epi16(g[0].lo, x0), _mm256_maddubs_epi16(g[0].hi, x0)};
#pragma GCC unroll 4
    for (int i = 1; i < n; ++i) {
      const __m256i xb = _mm256_set1_epi64x(load_i64(x + 8 * i));
      sum.lo = _mm256_add_epi16(sum.lo, _mm256_maddubs_epi16(g[i].lo, xb));
      sum.hi = _mm256_add_epi16(sum.hi, _mm256_maddubs_epi16(g[i].hi, xb));
    }
    return sum;
  }
  template <int n>
  static I32 dot(const Bytes* g, const int8_t* x) {
    const Bytes s = products<n>(g, x);
    const __m256i ones = _mm256_set1_epi16(1);
    return {_mm256_madd_epi16(s.lo, ones), _mm256_madd_epi16(s.hi, ones)};
  }
  template <int n>
  static I32 dot_scaled(const Bytes* g, const int8_t* x, Scale scale) {
    const Bytes s = products<n>(g, x);
    return {_mm256_madd_epi16(s.lo, scale.lo), _mm256_madd_epi16(s.hi, scale.hi)};
  }
  // Signed weights, each group widened alone (two products already reach 2^15). maddubs takes one side as u8:
  // |w| with x given w's sign (q8_0 activations, never -128), or |x| with w given x's sign (q8_K's -128; the
  // weights are then never -128).
  template <bool AbsOfX>
  static Cols signed_dot(const Bytes* g, const int8_t* x) {
    const __m256i ones = _mm256_set1_epi16(1);
    I32 sum{_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const __m256i xb = _mm256_set1_epi64x(load_i64(x + 8 * i));
      auto part = [&](__m256i w) {
        const __m256i u = AbsOfX ? _mm256_abs_epi8(xb) : _mm256_abs_epi8(w);
        const __m256i s = AbsOfX ? _mm256_sign_epi8(w, xb) : _mm256_sign_epi8(xb, w);
        return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), ones);
      };
      sum = {_mm256_add_epi32(sum.lo, part(g[i].lo)), _mm256_add_epi32(sum.hi, part(g[i].hi))};
    }
    return col_sums(sum);
  }
  static Cols dot_signed(const Bytes* g, const int8_t* x, int32_t) { return signed_dot<false>(g, x); }
  static Cols dot_signed_any(const Bytes* g, const int8_t* x, int32_t) { return signed_dot<true>(g, x); }
  static I32 zero_sums() { return {_mm256_setzero_si256(), _mm256_setzero_si256()}; }
  static I32 add_sums(I32 a, I32 b) { return {_mm256_add_epi32(a.lo, b.lo), _mm256_add_epi32(a.hi, b.hi)}; }
  // hadd leaves columns 0 1 4 5 | 2 3 6 7; the 64-bit permute puts them in order.
  static Cols col_sums(I32 a) { return _mm256_permute4x64_epi64(_mm256_hadd_epi32(a.lo, a.hi), 0xD8); }
  static Scale scale_u8(const uint8_t* p) {
    const __m128i s = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return {_mm256_cvtepu8_epi16(_mm_shuffle_epi8(s, _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3))),
            _mm256_cvtepu8_epi16(_mm_shuffle_epi8(s, _mm_setr_epi8(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7)))};
  }
  static Scale scale_s8(const int8_t* p) {
    const __m128i s = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return {_mm256_cvtepi8_epi16(_mm_shuffle_epi8(s, _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3))),
            _mm256_cvtepi8_epi16(_mm_shuffle_epi8(s, _mm_setr_epi8(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7)))};
  }
};

}  // namespace

void panels_avx2(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin,
                 int p_end) {
  panels<Avx2>(x, w, out, m_begin, m_end, p_begin, p_end);
}

}  // namespace parley::cpu::qmm
