// AVX-512 policy of the quantized matmul: a whole group (8 columns x 8 elements) in one zmm register.
// With VNNI, _mm512_dpbusd_epi32 sums four u8 x s8 products straight into int32; without it, AVX-512BW's
// maddubs and madd do as in AVX2. Included by qmatmul_avx512.cpp (BW) and qmatmul_avx512vnni.cpp (VNNI).
//
// Ports (measured on the AMX Xeon, 2 zmm uops a cycle at most): vpdpbusd, vpdpwssd, vpmaddwd, vpmaddubsw and the
// logic and adds issue on port 0 or 5; shifts only on 0; vpshufb, vpmovzx/sx and register broadcasts only on 5;
// zeroing moves are free. VNNI uops on ports 0/5 per 32 k, in a tile of 8 rows (per row, plus the tile's share):
//   q8_0: 4 vpdpbusd per row; the sign flip (4 vpxord a tile, 4 a row at one row) went to pack time.
//   q4_K: 4 vpdpbusd + 1 vpdpwssd per row (was + vpmaddwd + 2 vpaddd); tile: 4 and, 2 shifts (p0), 2 on p5:
//         48 a tile, was 64.
//   q6_K: 4 vpmaddubsw + 2 vpaddw + 2 vpdpwssd per row (was 2 vpmaddwd + 2 vpaddd); tile: 4 and, 4 ternlog,
//         5 shifts (p0), 4 on p5 (was 8): 81 a tile, was 101.
// One-port uops are under a tenth of each, so the loops are bound by the sum, not by one port.
#pragma once
#include "kernels/cpu/qmatmul_impl.hpp"
#include "kernels/cpu/qmatmul_ymm.hpp"

namespace parley::cpu::qmm {
namespace {

template <bool Vnni>
struct Avx512 : YmmColumns {
  using Bytes = __m512i;  // 64-bit lane c: column c
  using I32 = __m512i;    // int32 lanes 2c, 2c + 1: column c
  using Scale = __m512i;  // VNNI: int32 lanes 2c, 2c + 1; BW: int16 lanes 4c..4c+3 (q6_K: Scale16 on both)
  static constexpr int MR = 8;
  static constexpr int MR_HALF = 12;
  static constexpr int MR_WIDE_HALF = 16;

  // f16/bf16: two panels' 8 columns each widened into one zmm, so one FMA multiplies 16 columns.
  using Wide = __m512;
  static __m256i two_panels(const uint8_t* a, const uint8_t* b) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
                                   _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1);
  }
  static Wide half16(const uint8_t* a, const uint8_t* b) { return _mm512_cvtph_ps(two_panels(a, b)); }
  static Wide bf16x16(const uint8_t* a, const uint8_t* b) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(two_panels(a, b)), 16));
  }
  static Wide wide_zero() { return _mm512_setzero_ps(); }
  static Wide wide_fma(float x, Wide w, Wide acc) { return _mm512_fmadd_ps(_mm512_set1_ps(x), w, acc); }
  // The low 8 columns to a (a whole panel), the high ones to b (cols_b of them: the last panel may be short).
  static void wide_store(float* a, float* b, Wide v, int cols_b) {
    _mm256_storeu_ps(a, _mm512_castps512_ps256(v));
    store(b, _mm512_extractf32x8_ps(v, 1), cols_b);
  }

  // Signed weights as vpdpbusd takes them (VNNI): w + 128 as u8 (w ^ 0x80), flipped at pack time or by lookup.
  static constexpr bool kBiasedSigned = Vnni;

  static Bytes load(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static Bytes flip_sign(Bytes b) { return _mm512_xor_si512(b, _mm512_set1_epi8(static_cast<char>(0x80))); }
  static Bytes lo_nibbles(Bytes b) { return _mm512_and_si512(b, _mm512_set1_epi8(15)); }
  // Each byte (0..15) replaced by table[byte]: the 16-entry table in every 128-bit lane for vpshufb.
  static Bytes lookup(Bytes b, const int8_t* table) {
    return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(table16(table)), b);
  }
  static Bytes hi_nibbles(Bytes b) { return _mm512_and_si512(_mm512_srli_epi16(b, 4), _mm512_set1_epi8(15)); }
  // The 32 bytes of fifth bits in both halves; group g's are bit g (columns 0-3) and bit 4 + g (columns 4-7).
  static __m512i load_fifth(const uint8_t* p) {
    return _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  template <int Group, int Value = 16>
  static Bytes with_bit4(Bytes b, __m512i high) {  // the bit is clear below: adding 16 sets it
    const __m512i select = _mm512_inserti64x4(_mm512_set1_epi8(1 << Group), _mm256_set1_epi8(1 << (4 + Group)), 1);
    return _mm512_mask_add_epi8(b, _mm512_test_epi8_mask(high, select), b, _mm512_set1_epi8(Value));
  }
  // q3_K's third bit, from the same plane layout as the fifth bits, to bit 2.
  template <int Group>
  static Bytes with_bit2(Bytes b, __m512i high) {
    return with_bit4<Group, 4>(b, high);
  }
  // Group g's two bits of each byte (bits 2g, 2g + 1) as 0..3.
  template <int Group>
  static Bytes crumbs(Bytes b) {
    return _mm512_and_si512(_mm512_srli_epi16(b, 2 * Group), _mm512_set1_epi8(3));
  }
  // Bits Shift, Shift + 1 of each high byte to bits 4-5 of q: one 16-bit shift (what crosses a byte is masked off)
  // and one ternary-logic op, q | (bits & 0x30).
  template <int Shift>
  static Bytes with_hi2(Bytes q, Bytes high) {
    const __m512i bits = Shift < 4   ? _mm512_slli_epi16(high, 4 - Shift)
                         : Shift > 4 ? _mm512_srli_epi16(high, Shift - 4)
                                     : high;
    return _mm512_ternarylogic_epi32(q, bits, _mm512_set1_epi8(0x30), 0xF8);
  }

  static __m512i broadcast8(const int8_t* x) { return _mm512_set1_epi64(load_i64(x)); }
  // BW: int16 pair sums of n groups (the AVX2 bounds hold).
  template <int n>
  static __m512i products(const Bytes* g, const int8_t* x) {
    __m512i sum = _mm512_maddubs_epi16(g[0], broadcast8(x));
#pragma GCC unroll 4
    for (int i = 1; i < n; ++i) sum = _mm512_add_epi16(sum, _mm512_maddubs_epi16(g[i], broadcast8(x + 8 * i)));
    return sum;
  }
  template <int n>
  static I32 dot(const Bytes* g, const int8_t* x) {
    if constexpr (Vnni && n == 4) {
      const __m512i a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), g[0], broadcast8(x));
      const __m512i b = _mm512_dpbusd_epi32(_mm512_setzero_si512(), g[2], broadcast8(x + 16));
      return _mm512_add_epi32(_mm512_dpbusd_epi32(a, g[1], broadcast8(x + 8)),
                              _mm512_dpbusd_epi32(b, g[3], broadcast8(x + 24)));
    } else if constexpr (Vnni) {
      __m512i sum = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int i = 0; i < n; ++i) sum = _mm512_dpbusd_epi32(sum, g[i], broadcast8(x + 8 * i));
      return sum;
    } else {
      return _mm512_madd_epi16(products<n>(g, x), _mm512_set1_epi16(1));
    }
  }
  template <int n>
  static I32 dot_scaled(const Bytes* g, const int8_t* x, Scale scale) {
    if constexpr (Vnni)
      return _mm512_mullo_epi32(dot<n>(g, x), scale);
    else
      return _mm512_madd_epi16(products<n>(g, x), scale);
  }
  // q4_K's sums fit int16 (16 products of a 4-bit quant and an int8 activation: 16 * 15 * 128 < 2^15), so with
  // VNNI the low half of each int32 lane times the scale (its high half zero) is the whole product: one vpmaddwd
  // instead of vpmulld's two uops and twice the latency.
  template <int n>
  static I32 dot_scaled_fits16(const Bytes* g, const int8_t* x, Scale scale) {
    if constexpr (Vnni)
      return _mm512_madd_epi16(dot<n>(g, x), scale);
    else
      return dot_scaled<n>(g, x, scale);
  }
  // q4_K's sub-block into the running sums: with VNNI one vpdpbusd chain (its zeroed start is a move the renamer
  // eliminates), then vpdpwssd multiplies the int16 sum by the scale and adds it in one uop, where vpmaddwd and
  // vpaddd took two and a second chain a third: per sub-block and row 5 uops on ports 0/5, not 7 (see K45).
  template <int n>
  static I32 acc_scaled_fits16(I32 acc, const Bytes* g, const int8_t* x, Scale scale) {
    if constexpr (Vnni) {
      __m512i sum = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int i = 0; i < n; ++i) sum = _mm512_dpbusd_epi32(sum, g[i], broadcast8(x + 8 * i));
      return _mm512_dpwssd_epi32(acc, sum, scale);
    } else {
      return add_sums(acc, dot_scaled<n>(g, x, scale));
    }
  }
  // 6-bit quants (q6_K): two groups' maddubs sums fit int16 (4 * 63 * 128 < 2^15), so with VNNI too a sub-block's
  // scale goes on by vpmaddwd: three multiplies where two vpdpbusd and a vpmulld take four.
  using Scale16 = __m512i;  // int16 lanes 4c..4c+3
  static Scale16 scale16_s8(const int8_t* p) {
    return _mm512_cvtepi8_epi16(quads(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  template <int n>
  static I32 dot_scaled16(const Bytes* g, const int8_t* x, Scale16 scale) {
    return _mm512_madd_epi16(products<n>(g, x), scale);
  }
  // The same into the running sums: with VNNI vpdpwssd multiplies and adds in one uop (4 per sub-block, not 5).
  template <int n>
  static I32 acc_scaled16(I32 acc, const Bytes* g, const int8_t* x, Scale16 scale) {
    if constexpr (Vnni)
      return _mm512_dpwssd_epi32(acc, products<n>(g, x), scale);
    else
      return add_sums(acc, dot_scaled16<n>(g, x, scale));
  }
  // Signed weights. VNNI: g holds w + 128 as u8 (kBiasedSigned), times x, less 128 * sum(x): per 32 products
  // 4 vpdpbusd, 4 broadcast loads, no xor (it went to pack time); BW: |w| times x with w's sign.
  static Cols dot_signed(const Bytes* g, const int8_t* x, int32_t xsum) {
    __m512i sum = _mm512_setzero_si512();
    if constexpr (Vnni) {
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) sum = _mm512_dpbusd_epi32(sum, g[i], broadcast8(x + 8 * i));
      return sub(col_sums(sum), set1(128 * xsum));
    } else {
      const __m512i ones = _mm512_set1_epi16(1);
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const __m512i xb = broadcast8(x + 8 * i);
        const __m512i signed_x = _mm512_mask_sub_epi8(xb, _mm512_movepi8_mask(g[i]), _mm512_setzero_si512(), xb);
        sum = _mm512_add_epi32(sum, _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_abs_epi8(g[i]), signed_x), ones));
      }
      return col_sums(sum);
    }
  }
  // Signed weights against any activations, -128 included. VNNI: dot_signed is exact; BW: |x| as u8 times w
  // negated where x is negative (w is never -128).
  static Cols dot_signed_any(const Bytes* g, const int8_t* x, int32_t xsum) {
    if constexpr (Vnni) {
      return dot_signed(g, x, xsum);
    } else {
      const __m512i ones = _mm512_set1_epi16(1);
      __m512i sum = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const __m512i xb = broadcast8(x + 8 * i);
        const __m512i w = _mm512_mask_sub_epi8(g[i], _mm512_movepi8_mask(xb), _mm512_setzero_si512(), g[i]);
        sum = _mm512_add_epi32(sum, _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_abs_epi8(xb), w), ones));
      }
      return col_sums(sum);
    }
  }
  static I32 zero_sums() { return _mm512_setzero_si512(); }
  static I32 add_sums(I32 a, I32 b) { return _mm512_add_epi32(a, b); }
  static Cols col_sums(I32 a) { return _mm512_cvtepi64_epi32(_mm512_add_epi32(a, _mm512_srli_epi64(a, 32))); }

  static Scale scale_u8(const uint8_t* p) {
    const __m128i s = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    if constexpr (Vnni)
      return _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(s, s));
    else
      return _mm512_cvtepu8_epi16(quads(s));
  }
  // Bytes s0 s0 s0 s0 s1 ... s7: each column's factor four times, by one in-lane vpshufb of the 8 bytes in both
  // lanes (a broadcast, which the compiler folds into the load), not two shuffles and an insert on port 5.
  static __m256i quads(__m128i s) {
    return _mm256_shuffle_epi8(_mm256_broadcastq_epi64(s),
                               _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5,
                                                6, 6, 6, 6, 7, 7, 7, 7));
  }
};

}  // namespace
}  // namespace parley::cpu::qmm
