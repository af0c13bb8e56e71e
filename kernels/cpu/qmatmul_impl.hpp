// The quantized matmul written once over an ISA policy V and instantiated per ISA (qmatmul_generic.cpp,
// qmatmul_avx2.cpp, qmatmul_avx512*.cpp, each with its own -m flags). Everything here has internal linkage,
// so no translation unit can end up calling another's instructions.
//
// Batch invariance by construction: output (m, n) lives in lane n % 8 of row m's float accumulator, which
// takes one multiply-add per block in k order from zero. Row tiles only share the unpacked weights; the
// integer sums are exact, so every ISA and every tile computes the same bits.
//
// A policy V provides, for one panel of 8 columns:
//   Bytes  one group, 8 columns x 8 elements (byte 8c + e)     I32  partial int32 sums, per column
//   Cols   8 int32, one per column                             F    8 floats, one per column
//   Scale  a per-column factor for I32 sums                    Pairs two sub-blocks' per-column int16 factors
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "kernels/cpu/qmatmul_kernels.hpp"
#include "kernels/quant_grids.hpp"

namespace parley::cpu::qmm {
namespace {

inline int64_t load_i64(const void* p) {
  int64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// One activation row.
struct Row {
  const int8_t* qs;
  const float* d;
  const int32_t* sums;
  const float* offsets;
  const float* x;
  const int32_t* min_pairs;   // q8_K: QuantizedRows::min_pairs
  const int32_t* bsum_pairs;  // q8_K: QuantizedRows::bsum_pairs
};

inline Row row_of(const QuantizedRows& x, int m) {
  Row row{nullptr, nullptr, nullptr, nullptr, x.x + int64_t(m) * x.K, nullptr, nullptr};
  if (x.qs.empty()) return row;
  row.qs = x.qs.data() + int64_t(m) * x.K;
  row.d = x.d.data() + int64_t(m) * x.blocks_per_row();
  row.sums = x.sums.data() + int64_t(m) * x.sums_per_row();
  if (!x.offsets.empty()) row.offsets = x.offsets.data() + int64_t(m) * x.blocks_per_row();
  if (!x.min_pairs.empty()) row.min_pairs = x.min_pairs.data() + int64_t(m) * x.min_pairs_per_row();
  if (!x.bsum_pairs.empty()) row.bsum_pairs = x.bsum_pairs.data() + int64_t(m) * x.bsum_pairs_per_row();
  return row;
}

// --- Unpacking one 32-element unit of a panel into its four groups (quant_pack.cpp's write_units) ---

template <class V>
inline void unpack_nibbles(const uint8_t* q, typename V::Bytes (&g)[4]) {
  const auto c0 = V::load(q), c1 = V::load(q + 64);
  g[0] = V::lo_nibbles(c0), g[1] = V::lo_nibbles(c1), g[2] = V::hi_nibbles(c0), g[3] = V::hi_nibbles(c1);
}

template <class V>
inline void unpack_fifth(const uint8_t* q, typename V::Bytes (&g)[4]) {
  unpack_nibbles<V>(q, g);
  const auto high = V::load_fifth(q + 128);
  g[0] = V::template with_bit4<0>(g[0], high), g[1] = V::template with_bit4<1>(g[1], high);
  g[2] = V::template with_bit4<2>(g[2], high), g[3] = V::template with_bit4<3>(g[3], high);
}

// q3_K: each group's two low bits from one 64-byte plane, the third from a 32-byte plane laid out as the fifth bits.
template <class V>
inline void unpack_three(const uint8_t* q, typename V::Bytes (&g)[4]) {
  const auto low = V::load(q);
  const auto high = V::load_fifth(q + 64);
  g[0] = V::template with_bit2<0>(V::template crumbs<0>(low), high);
  g[1] = V::template with_bit2<1>(V::template crumbs<1>(low), high);
  g[2] = V::template with_bit2<2>(V::template crumbs<2>(low), high);
  g[3] = V::template with_bit2<3>(V::template crumbs<3>(low), high);
}

template <class V>
inline void unpack_six(const uint8_t* q, typename V::Bytes (&g)[4]) {
  unpack_nibbles<V>(q, g);
  const auto high = V::load(q + 128);
  g[0] = V::template with_hi2<0>(g[0], high), g[1] = V::template with_hi2<2>(g[1], high);
  g[2] = V::template with_hi2<4>(g[2], high), g[3] = V::template with_hi2<6>(g[3], high);
}

// q4_K's sub-block dot (its sums fit int16 lanes), by the policy's cheaper multiply for that where it has one.
template <class V>
concept HasFits16 = requires(const typename V::Bytes* g, const int8_t* x, typename V::Scale s) {
  V::template dot_scaled_fits16<4>(g, x, s);
};

template <class V, int n>
typename V::I32 dot_scaled_fits16(const typename V::Bytes* g, const int8_t* x, typename V::Scale scale) {
  if constexpr (HasFits16<V>)
    return V::template dot_scaled_fits16<n>(g, x, scale);
  else
    return V::template dot_scaled<n>(g, x, scale);
}

// The same added into the running sums, in one step where the policy fuses the multiply and the add.
template <class V>
concept HasAccFits16 = requires(typename V::I32 a, const typename V::Bytes* g, const int8_t* x, typename V::Scale s) {
  V::template acc_scaled_fits16<4>(a, g, x, s);
};

template <class V, int n>
typename V::I32 acc_scaled_fits16(typename V::I32 acc, const typename V::Bytes* g, const int8_t* x,
                                  typename V::Scale scale) {
  if constexpr (HasAccFits16<V>)
    return V::template acc_scaled_fits16<n>(acc, g, x, scale);
  else
    return V::add_sums(acc, dot_scaled_fits16<V, n>(g, x, scale));
}

// q6_K's sub-block dot into the running sums, by the policy's int16 path where it has one (Scale16), else its
// dot_scaled.
template <class V>
concept HasScale16 = requires {
  typename V::Scale16;
};

template <class V>
auto scale16_s8(const int8_t* p) {
  if constexpr (HasScale16<V>)
    return V::scale16_s8(p);
  else
    return V::scale_s8(p);
}

template <class V, int n, class S>
typename V::I32 acc_scaled16(typename V::I32 acc, const typename V::Bytes* g, const int8_t* x, S scale) {
  if constexpr (HasScale16<V>)
    return V::template acc_scaled16<n>(acc, g, x, scale);
  else
    return V::add_sums(acc, V::template dot_scaled<n>(g, x, scale));
}

// --- One block of one panel against R rows: each type's integer sums, then its float epilogue ---

// q4_0, q5_0: x = d * (q - offset); the offset comes off the integer sum as offset * the activations' sum.
template <int Bits>
struct Legacy0 {
  template <class V, int R>
  static void block(const uint8_t* q, const uint8_t* aux, const Row* rows, int b, typename V::F* acc) {
    typename V::Bytes g[4];
    if constexpr (Bits == 4)
      unpack_nibbles<V>(q, g);
    else
      unpack_fifth<V>(q, g);
    const auto dw = V::half8(aux);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const auto isum = V::sub(V::col_sums(V::template dot<4>(g, rows[r].qs + 32 * b)),
                               V::set1((Bits == 4 ? 8 : 16) * rows[r].sums[b]));
      acc[r] = V::fma(V::to_float(isum), V::mul(dw, V::fset1(rows[r].d[b])), acc[r]);
    }
  }
};

// q4_1, q5_1: x = d * q + m, so m meets the activations as m * (their scale * their sum).
template <int Bits>
struct Legacy1 {
  template <class V, int R>
  static void block(const uint8_t* q, const uint8_t* aux, const Row* rows, int b, typename V::F* acc) {
    typename V::Bytes g[4];
    if constexpr (Bits == 4)
      unpack_nibbles<V>(q, g);
    else
      unpack_fifth<V>(q, g);
    const auto dw = V::half8(aux), mw = V::half8(aux + 16);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const auto isum = V::col_sums(V::template dot<4>(g, rows[r].qs + 32 * b));
      acc[r] = V::fma(V::to_float(isum), V::mul(dw, V::fset1(rows[r].d[b])), acc[r]);
      acc[r] = V::fma(mw, V::fset1(rows[r].offsets[b]), acc[r]);
    }
  }
};

// One 32-block of signed weights g (scaled by dw per column) against R rows' q8_0 blocks b.
template <class V, int R>
inline void signed_block(const typename V::Bytes (&g)[4], typename V::F dw, const Row* rows, int b,
                         typename V::F* acc) {
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    const auto isum = V::dot_signed(g, rows[r].qs + 32 * b, rows[r].sums[b]);
    acc[r] = V::fma(V::to_float(isum), V::mul(dw, V::fset1(rows[r].d[b])), acc[r]);
  }
}

// Biased: the pack holds w ^ 0x80 (QuantMatrix::biased). A pack in the other convention than the policy's
// costs one xor per group per row tile, outside the loop over rows.
template <bool Biased>
struct Q8 {
  template <class V, int R>
  static void block(const uint8_t* q, const uint8_t* aux, const Row* rows, int b, typename V::F* acc) {
    typename V::Bytes g[4];
    for (int i = 0; i < 4; ++i) g[i] = V::load(q + 64 * i);
    if constexpr (Biased != V::kBiasedSigned)
      for (auto& x : g) x = V::flip_sign(x);
    signed_block<V, R>(g, V::half8(aux), rows, b, acc);
  }
};

// A 16-entry signed grid in the policy's convention for signed weights: flipped once here, not per use.
struct Grid16 {
  alignas(16) int8_t v[16];
};
constexpr Grid16 biased_grid(const int8_t (&grid)[16]) {
  Grid16 out{};
  for (int i = 0; i < 16; ++i) out.v[i] = static_cast<int8_t>(grid[i] ^ 0x80);
  return out;
}
inline constexpr Grid16 kIq4nlBiased = biased_grid(quant::kIq4nl);
inline constexpr Grid16 kFp4DoubledBiased = biased_grid(quant::kFp4Doubled);

template <class V>
const int8_t* signed_grid(const int8_t* grid, const Grid16& biased) {
  return V::kBiasedSigned ? biased.v : grid;
}

// iq4_xs: x = d * ls_j * v per sub-block j of 32, v the non-linear grid value of the nibble, looked up; each
// sub-block's signed dot (q8_K activations, -128 included) times its signed scale ls_j, summed, then d.
struct Iq4Xs {
  template <class V, int R>
  static void block(const uint8_t* q, const uint8_t* aux, const Row* rows, int b, typename V::F* acc) {
    const auto dw = V::half8(aux);
    const auto* sc = reinterpret_cast<const int8_t*>(aux + 16);
    typename V::Cols isum[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) isum[r] = V::set1(0);
    for (int u = 0; u < 8; ++u) {
      typename V::Bytes g[4];
      unpack_nibbles<V>(q + 128 * u, g);
      for (auto& x : g) x = V::lookup(x, signed_grid<V>(quant::kIq4nl, kIq4nlBiased));
      const auto scale = V::cols_s8(sc + 8 * u);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const int32_t* bs = rows[r].sums + 16 * b;
        const auto dot = V::dot_signed_any(g, rows[r].qs + 256 * b + 32 * u, bs[2 * u] + bs[2 * u + 1]);
        isum[r] = V::add(isum[r], V::mullo(dot, scale));
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) acc[r] = V::fma(V::to_float(isum[r]), V::mul(dw, V::fset1(rows[r].d[b])), acc[r]);
  }
};

// mxfp4: x = 2^(e - 128) * v with v the doubled e2m1 value of the nibble: looked up, then Q8's signed dot.
struct Mxfp4 {
  template <class V, int R>
  static void block(const uint8_t* q, const uint8_t* aux, const Row* rows, int b, typename V::F* acc) {
    typename V::Bytes g[4];
    unpack_nibbles<V>(q, g);
    for (auto& x : g) x = V::lookup(x, signed_grid<V>(quant::kFp4Doubled, kFp4DoubledBiased));
    signed_block<V, R>(g, V::e8m0x8(aux), rows, b, acc);
  }
};

// q4_K, q5_K: x = d * sc_j * q - dmin * m_j per sub-block j of 32; the mins meet the q8_K bsums.
template <int Bits>
struct K45 {
  template <class V, int R>
  static void block(const uint8_t* q, const uint8_t* aux, const Row* rows, int b, typename V::F* acc) {
    const auto dw = V::half8(aux), dmin = V::half8(aux + 16);
    typename V::I32 isum[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) isum[r] = V::zero_sums();
    for (int u = 0; u < 8; ++u) {
      typename V::Bytes g[4];
      if constexpr (Bits == 4)
        unpack_nibbles<V>(q + 128 * u, g);
      else
        unpack_fifth<V>(q + 160 * u, g);
      const auto scale = V::scale_u8(aux + 32 + 8 * u);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r)
        isum[r] = Bits == 4 ? acc_scaled_fits16<V, 4>(isum[r], g, rows[r].qs + 256 * b + 32 * u, scale)
                            : V::add_sums(isum[r], V::template dot_scaled<4>(g, rows[r].qs + 256 * b + 32 * u, scale));
    }
    typename V::Pairs mins[4];
    for (int j = 0; j < 4; ++j) mins[j] = V::pairs_u8(aux + 96 + 16 * j);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const int32_t* pairs = rows[r].min_pairs + 4 * b;
      auto msum = V::set1(0);
      for (int j = 0; j < 4; ++j) msum = V::add(msum, V::madd_pairs(mins[j], pairs[j]));
      const auto dx = V::fset1(rows[r].d[b]);
      acc[r] = V::fma(V::to_float(V::col_sums(isum[r])), V::mul(dw, dx), acc[r]);
      acc[r] = V::fnma(V::to_float(msum), V::mul(dmin, dx), acc[r]);
    }
  }
};

// q6_K: x = d * sc_j * (q - 32) per sub-block j of 16; the 32 comes off as 32 * sum_j sc_j * bsum_j. q3_K is the
// same with q - 4 (its 3-bit quants in two planes, its scales as the signed sc - 32).
template <int Bits>
struct K16 {
  template <class V, int R>
  static void block(const uint8_t* q, const uint8_t* aux, const Row* rows, int b, typename V::F* acc) {
    const auto dw = V::half8(aux);
    const auto* sc = reinterpret_cast<const int8_t*>(aux + 16);
    typename V::I32 isum[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) isum[r] = V::zero_sums();
    for (int u = 0; u < 8; ++u) {
      typename V::Bytes g[4];
      if constexpr (Bits == 6)
        unpack_six<V>(q + 192 * u, g);
      else
        unpack_three<V>(q + 96 * u, g);
      const auto s0 = scale16_s8<V>(sc + 16 * u), s1 = scale16_s8<V>(sc + 16 * u + 8);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const int8_t* x = rows[r].qs + 256 * b + 32 * u;
        isum[r] = acc_scaled16<V, 2>(acc_scaled16<V, 2>(isum[r], g, x, s0), g + 2, x + 16, s1);
      }
    }
    typename V::Pairs scales[8];
    for (int j = 0; j < 8; ++j) scales[j] = V::pairs_s8(sc + 16 * j);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const int32_t* pairs = rows[r].bsum_pairs + 8 * b;
      auto ssum = V::set1(0);
      for (int j = 0; j < 8; ++j) ssum = V::add(ssum, V::madd_pairs(scales[j], pairs[j]));
      const auto total = V::sub(V::col_sums(isum[r]), Bits == 6 ? V::shl5(ssum) : V::shl2(ssum));
      acc[r] = V::fma(V::to_float(total), V::mul(dw, V::fset1(rows[r].d[b])), acc[r]);
    }
  }
};

// --- Tiles of R rows against one panel, and the drivers ---

template <class V, int R>
inline void store_rows(const typename V::F* acc, float* out, int N, int m0, int p) {
  const int n0 = p * QuantMatrix::kPanel, cols = std::min(QuantMatrix::kPanel, N - n0);
  for (int r = 0; r < R; ++r) V::store(out + int64_t(m0 + r) * N + n0, acc[r], cols);
}

// Panels lie back to back, so the bytes a panel's length past the ones in use are the next panel's at the same
// place: asking for them now hides DRAM latency, which the hardware streamer leaves exposed at every 4 KiB boundary.
// A panel ahead, at most 16 KiB: on a Zen 5 EPYC a fixed 4 KiB left q4_K's batch 1 on 2048-wide rows at half the
// rate of a plain read (bench_qmatmul's batch-1-from-DRAM table), while a fixed 16 KiB cost the 110M shape's short
// panels (768-wide rows, chunks of ~21 KiB) a fifth of its batch 1; 32 KiB fell back on the wide rows too.
constexpr int64_t kMaxPrefetchDistance = 16384;

inline void prefetch_ahead(const uint8_t* p, int bytes, int64_t distance) {
  for (int offset = 0; offset < bytes; offset += 64) __builtin_prefetch(p + distance + offset, 0, 3);
}

template <class V, class T, int R>
void quant_tile(const QuantizedRows& x, const QuantMatrix& w, const PanelLayout& layout, float* out, int m0, int p) {
  const uint8_t* q = w.data.data() + p * w.panel_stride;
  const uint8_t* aux = q + w.aux_offset;
  Row rows[R];
  typename V::F acc[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) rows[r] = row_of(x, m0 + r), acc[r] = V::fzero();
  const int blocks = w.K / layout.block;
  const int64_t ahead = std::min<int64_t>(w.panel_stride, kMaxPrefetchDistance);
  for (int b = 0; b < blocks; ++b) {
    prefetch_ahead(q + int64_t(b) * layout.quant_bytes, layout.quant_bytes, ahead);
    T::template block<V, R>(q + int64_t(b) * layout.quant_bytes, aux + int64_t(b) * layout.aux_bytes, rows, b, acc);
  }
  store_rows<V, R>(acc, out, w.N, m0, p);
}

// f16, bf16: widened to floats in registers, one multiply-add chain over k per output element; PC panels at once
// give a few rows enough independent chains to hide the FMA latency.
template <class V, bool Bf16, int R, int PC>
void half_tile(const QuantizedRows& x, const QuantMatrix& w, float* out, int m0, int p0) {
  const uint8_t* panel[PC];
  const float* xr[R];
  typename V::F acc[PC][R];
#pragma GCC unroll 16
  for (int j = 0; j < PC; ++j) {
    panel[j] = w.data.data() + (p0 + j) * w.panel_stride;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) acc[j][r] = V::fzero();
  }
  for (int r = 0; r < R; ++r) xr[r] = x.x + int64_t(m0 + r) * w.K;
  for (int k = 0; k < w.K; ++k) {
#pragma GCC unroll 16
    for (int j = 0; j < PC; ++j) {
      const auto wv = Bf16 ? V::bf16x8(panel[j] + 16 * k) : V::half8(panel[j] + 16 * k);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) acc[j][r] = V::fma(V::fset1(xr[r][k]), wv, acc[j][r]);
    }
  }
  for (int j = 0; j < PC; ++j) store_rows<V, R>(acc[j], out, w.N, m0, p0 + j);
}

template <int R, class Run>
inline void rest_rows(int rows, int m, Run& run) {
  if constexpr (R > 0) {
    if (rows == R) return run(std::integral_constant<int, R>{}, m);
    rest_rows<R - 1>(rows, m, run);
  }
}

// Rows in tiles of MR and one smaller tile: a row's arithmetic is the same in any tile.
template <int MR, class Run>
inline void row_tiles(int m_begin, int m_end, Run run) {
  int m = m_begin;
  for (; m + MR <= m_end; m += MR) run(std::integral_constant<int, MR>{}, m);
  rest_rows<MR - 1>(m_end - m, m, run);
}

template <class V, class T>
void quant_panels(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin,
                  int p_end) {
  const PanelLayout layout = panel_layout(w.type);
  for (int p = p_begin; p < p_end; ++p)
    row_tiles<V::MR>(m_begin, m_end,
                     [&](auto r, int m0) { quant_tile<V, T, decltype(r)::value>(x, w, layout, out, m0, p); });
}

// f16, bf16 on AVX-512: panels p0 and p0 + 1 in one zmm per k. Each column is still one chain over k in order,
// so the bits are the 8-lane tile's. The rows come from x.tiles (one pointer, immediate offsets): 16 row pointers
// would spill to vector registers and cost a move each per k.
template <class V, bool Bf16, int R>
void half_tile_pair(const QuantizedRows& x, const QuantMatrix& w, float* out, int m0, int p0) {
  const uint8_t* a = w.data.data() + p0 * w.panel_stride;
  const uint8_t* b = a + w.panel_stride;
  typename V::Wide acc[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) acc[r] = V::wide_zero();
  constexpr int kRows = QuantizedRows::kTileRows;
  const float* tile = x.tiles.data() + int64_t(m0) * w.K;  // m0 on a tile's start: tile m0 / 16
  for (int k = 0; k < w.K; ++k) {
    const auto wv = Bf16 ? V::bf16x16(a + 16 * k, b + 16 * k) : V::half16(a + 16 * k, b + 16 * k);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) acc[r] = V::wide_fma(tile[kRows * k + r], wv, acc[r]);
  }
  const int n0 = p0 * QuantMatrix::kPanel, cols_b = std::min(QuantMatrix::kPanel, w.N - n0 - QuantMatrix::kPanel);
  for (int r = 0; r < R; ++r)
    V::wide_store(out + int64_t(m0 + r) * w.N + n0, out + int64_t(m0 + r) * w.N + n0 + QuantMatrix::kPanel, acc[r],
                  cols_b);
}

template <class V, bool Bf16>
void half_panels(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin,
                 int p_end) {
  int p = p_begin;
  if constexpr (requires { V::MR_WIDE_HALF; }) {
    static_assert(V::MR_WIDE_HALF == QuantizedRows::kTileRows);
    // quantize_activations tiles the rows of 4 or more on AVX-512; row blocks start on a tile.
    if (!x.tiles.empty() && m_begin % QuantizedRows::kTileRows == 0 && m_end - m_begin >= 4)
      for (; p + 2 <= p_end; p += 2)
        row_tiles<V::MR_WIDE_HALF>(
            m_begin, m_end, [&](auto r, int m0) { half_tile_pair<V, Bf16, decltype(r)::value>(x, w, out, m0, p); });
  }
  if (m_end - m_begin < 4)
    for (; p + 4 <= p_end; p += 4)
      row_tiles<3>(m_begin, m_end,
                   [&](auto r, int m0) { half_tile<V, Bf16, decltype(r)::value, 4>(x, w, out, m0, p); });
  for (; p < p_end; ++p)
    row_tiles<V::MR_HALF>(m_begin, m_end,
                          [&](auto r, int m0) { half_tile<V, Bf16, decltype(r)::value, 1>(x, w, out, m0, p); });
}

template <class V>
void panels(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin, int p_end) {
  using quant::GgmlType;
  switch (w.type) {
    case GgmlType::Q4_0:
      return quant_panels<V, Legacy0<4>>(x, w, out, m_begin, m_end, p_begin, p_end);
    case GgmlType::Q5_0:
      return quant_panels<V, Legacy0<5>>(x, w, out, m_begin, m_end, p_begin, p_end);
    case GgmlType::Q4_1:
      return quant_panels<V, Legacy1<4>>(x, w, out, m_begin, m_end, p_begin, p_end);
    case GgmlType::Q5_1:
      return quant_panels<V, Legacy1<5>>(x, w, out, m_begin, m_end, p_begin, p_end);
    case GgmlType::Q8_0:
      if (w.biased) return quant_panels<V, Q8<true>>(x, w, out, m_begin, m_end, p_begin, p_end);
      return quant_panels<V, Q8<false>>(x, w, out, m_begin, m_end, p_begin, p_end);
    case GgmlType::MXFP4:
      return quant_panels<V, Mxfp4>(x, w, out, m_begin, m_end, p_begin, p_end);
    case GgmlType::IQ4_XS:
      return quant_panels<V, Iq4Xs>(x, w, out, m_begin, m_end, p_begin, p_end);
    case GgmlType::Q4_K:
      return quant_panels<V, K45<4>>(x, w, out, m_begin, m_end, p_begin, p_end);
    case GgmlType::Q5_K:
      return quant_panels<V, K45<5>>(x, w, out, m_begin, m_end, p_begin, p_end);
    case GgmlType::Q6_K:
      return quant_panels<V, K16<6>>(x, w, out, m_begin, m_end, p_begin, p_end);
    case GgmlType::Q3_K:
      return quant_panels<V, K16<3>>(x, w, out, m_begin, m_end, p_begin, p_end);
    case GgmlType::F16:
      return half_panels<V, false>(x, w, out, m_begin, m_end, p_begin, p_end);
    case GgmlType::BF16:
      return half_panels<V, true>(x, w, out, m_begin, m_end, p_begin, p_end);
    default:
      break;
  }
  panel_layout(w.type);  // throws, naming the type
}

}  // namespace
}  // namespace parley::cpu::qmm
