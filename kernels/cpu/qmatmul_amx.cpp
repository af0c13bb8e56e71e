// AMX kernel of the quantized matmul (built with -mamx-tile -mamx-int8 and the AVX-512 VNNI flags; called only
// where the CPU has AMX and Linux granted this process the tile state). For q8_0, q4_0, q4_K and q5_K weights:
// a panel pair's (16 columns') 32-element units are unpacked once into weight tiles, then each tile of 16
// activation rows takes one TDPBSSD (signed q8_0 weights) or TDPBSUD (unsigned 4- and 5-bit quants) per unit,
// which gives every (row, column) the exact int32 sum the VNNI kernel computes for that unit. The epilogue is
// the VNNI kernel's, lane for lane, in the same order (per block for q8_0 and q4_0; per super-block for the
// K-quants, whose sub-block scales go on as exact integer products first), so the bits are every other ISA's.
// The rows past the last whole tile, an odd last panel and the other weight types go to the AVX-512 VNNI kernels.
//
// What bounds it (measured with bench_qmatmul, see docs/benchmarks.md): a unit is half a tile's depth (32 of 64
// bytes), and its int32 tile is stored and reloaded for the epilogue, 16 rows of vector work per TDPB*.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/cpu/amx_tiles.hpp"
#include "kernels/cpu/qmatmul_avx512.hpp"

namespace parley::cpu::qmm {
namespace {

using quant::GgmlType;
using V = Avx512<true>;

constexpr int kRows = 16;           // activation rows per tile
constexpr int kUnit = 32;           // k per tile product (a q8_0/q4_0 block, a K-quant sub-block)
constexpr int kTileBytes = 8 * 64;  // a weight tile: 8 rows of 4 k x 16 columns
constexpr int kUnitsPerSuper = 256 / kUnit;

// Tile registers (GCC's intrinsics want them as literals): sums 0 and 1, activations 2 and 3, weights 4 and 5,
// two of each so that one unit's tile work overlaps the previous unit's epilogue.
// depth: k per tile product, 32 (a q8_0/q4_0 block, a q4_K/q5_K sub-block) or 16 (a q6_K sub-block).
void configure_tiles(int depth) {
  AmxTileConfig c;
  for (int t : {0, 1}) c.rows[t] = kRows, c.colsb[t] = 64;  // 16 rows x 16 int32 columns
  for (int t : {2, 3}) c.rows[t] = kRows, c.colsb[t] = uint16_t(depth);
  for (int t : {4, 5}) c.rows[t] = uint8_t(depth / 4), c.colsb[t] = 64;
  _tile_loadconfig(&c);
}

// Unit u's four groups (8 columns x 8 k, byte 8c + e) of one panel, as the VNNI kernel unpacks them; q8_0 as
// signed bytes for TDPBSSD (a biased pack flipped back once per panel pair, not per row tile).
void unit_groups(const QuantMatrix& w, const uint8_t* panel, int u, __m512i (&g)[4]) {
  switch (w.type) {
    case GgmlType::Q8_0:
      for (int i = 0; i < 4; ++i) g[i] = V::load(panel + 256 * u + 64 * i);
      if (w.biased)
        for (__m512i& x : g) x = V::flip_sign(x);
      return;
    case GgmlType::Q4_0:
      return unpack_nibbles<V>(panel + 128 * u, g);
    case GgmlType::Q4_K:
      return unpack_nibbles<V>(panel + 1024 * (u / kUnitsPerSuper) + 128 * (u % kUnitsPerSuper), g);
    case GgmlType::Q5_K:
      return unpack_fifth<V>(panel + 1280 * (u / kUnitsPerSuper) + 160 * (u % kUnitsPerSuper), g);
    default:  // Q6_K
      return unpack_six<V>(panel + 1536 * (u / kUnitsPerSuper) + 192 * (u % kUnitsPerSuper), g);
  }
}

// Two panels' unit as a weight tile: row r holds k 4r..4r+3 of each of the 16 columns (left panel's first).
// Group i holds column c's k 8i..8i+3 in dword 2c and 8i+4..8i+7 in dword 2c + 1.
void weight_tile(const __m512i (&left)[4], const __m512i (&right)[4], uint8_t* tile) {
  const __m512i first = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(1));
  for (int i = 0; i < 4; ++i) {
    _mm512_store_si512(tile + 128 * i, _mm512_permutex2var_epi32(left[i], first, right[i]));
    _mm512_store_si512(tile + 128 * i + 64, _mm512_permutex2var_epi32(left[i], second, right[i]));
  }
}

// The exact integer sums of unit u (depth k) for a row tile, left in `sums` ([16 rows][16 columns]), on tile set
// 0 or 1. Signed weights (q8_0) take TDPBSSD; unsigned quants TDPBSUD (activations signed, weights unsigned).
// A unit of depth 16 is half of a 32-k weight tile: its rows are that tile's first or last four.
#define PARLEY_AMX_UNIT_SUMS(name, sum_tile, act_tile, weight_tile, product)                             \
  inline void name(const int8_t* acts, int K, const uint8_t* weights, int u, int depth, int32_t* sums) { \
    _tile_zero(sum_tile);                                                                                \
    _tile_loadd(act_tile, acts + int64_t(depth) * u, K);                                                 \
    _tile_loadd(weight_tile, weights + int64_t(16 * depth) * u, 64);                                     \
    product(sum_tile, act_tile, weight_tile);                                                            \
    _tile_stored(sum_tile, sums, 64);                                                                    \
  }
PARLEY_AMX_UNIT_SUMS(signed_sums_0, 0, 2, 4, _tile_dpbssd)
PARLEY_AMX_UNIT_SUMS(signed_sums_1, 1, 3, 5, _tile_dpbssd)
PARLEY_AMX_UNIT_SUMS(unsigned_sums_0, 0, 2, 4, _tile_dpbsud)
PARLEY_AMX_UNIT_SUMS(unsigned_sums_1, 1, 3, 5, _tile_dpbsud)
#undef PARLEY_AMX_UNIT_SUMS

// 16 fp16 scales: the left panel's 8 then the right's.
__m512 half16(const uint8_t* left, const uint8_t* right) {
  const __m256 lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(left)));
  const __m256 hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(right)));
  return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

// Eight bytes of each panel (one per column): the left panel's then the right's.
__m128i both_panels8(const uint8_t* left, const uint8_t* right) {
  return _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(left)),
                            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(right)));
}

// A sub-block's int32 sums times its per-column scale, into the super-block's sums (started afresh by the first).
void add_scaled(int32_t (&isum)[kRows][16], const int32_t* s, __m512i scale, bool first) {
#pragma GCC unroll 16
  for (int r = 0; r < kRows; ++r) {
    const __m512i scaled = _mm512_mullo_epi32(_mm512_load_si512(s + 16 * r), scale);
    _mm512_store_si512(isum[r], first ? scaled : _mm512_add_epi32(_mm512_load_si512(isum[r]), scaled));
  }
}

// One panel pair's columns, its aux streams, and the row tile being computed: its rows' activation streams from
// row m0 on, with their strides worked out once (each a division, which the compiler cannot hoist past the tile
// stores).
struct PairTile {
  PairTile(const uint8_t* left_aux, const uint8_t* right_aux, int aux_bytes, const QuantizedRows& x, int m0)
      : aux{left_aux, right_aux},
        aux_bytes(aux_bytes),
        d_stride(x.blocks_per_row()),
        sums_stride(x.sums_per_row()),
        min_stride(x.min_pairs_per_row()),
        bsum_stride(x.bsum_pairs_per_row()),
        d(x.d.data() + int64_t(m0) * d_stride),
        sums_(x.sums.data() + int64_t(m0) * sums_stride),
        min_pairs_(x.min_pairs.empty() ? nullptr : x.min_pairs.data() + int64_t(m0) * min_stride),
        bsum_pairs_(x.bsum_pairs.empty() ? nullptr : x.bsum_pairs.data() + int64_t(m0) * bsum_stride) {}
  const uint8_t* aux[2];  // the left and right panels' scales
  int aux_bytes;          // per block
  int d_stride, sums_stride, min_stride, bsum_stride;
  const float* d;
  const int32_t *sums_, *min_pairs_, *bsum_pairs_;
  const float* dx(int r) const { return d + int64_t(r) * d_stride; }
  const int32_t* sums(int r) const { return sums_ + int64_t(r) * sums_stride; }
  const int32_t* min_pairs(int r) const { return min_pairs_ + int64_t(r) * min_stride; }
  const int32_t* bsum_pairs(int r) const { return bsum_pairs_ + int64_t(r) * bsum_stride; }
  __m512 half(int b, int offset) const {
    return half16(aux[0] + int64_t(aux_bytes) * b + offset, aux[1] + int64_t(aux_bytes) * b + offset);
  }
};

// q8_0, q4_0: per block of 32, acc += isum * (d * dx), with q4_0's offset 8 taken off as 8 * sum(x) first.
template <bool Offset8>
struct BlockEpilogue {
  static constexpr int kDepth = kUnit;
  __m512 acc[kRows];
  void operator()(const PairTile& t, int u, const int32_t* s) {
    const __m512 dw = t.half(u, 0);
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      __m512i isum = _mm512_load_si512(s + 16 * r);
      if constexpr (Offset8) isum = _mm512_sub_epi32(isum, _mm512_set1_epi32(8 * t.sums(r)[u]));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, _mm512_set1_ps(t.dx(r)[u])), acc[r]);
    }
  }
};

// q4_K, q5_K: sub-block j's sums times its scale, added up exactly over the super-block; then, as the VNNI
// kernel does, acc += isum * (d * dx) and acc -= msum * (dmin * dx), msum the mins against the q8_K bsums.
struct SuperEpilogue {
  static constexpr int kDepth = kUnit;
  __m512 acc[kRows];
  alignas(64) int32_t isum[kRows][16];
  void operator()(const PairTile& t, int u, const int32_t* s) {
    const int b = u / kUnitsPerSuper, j = u % kUnitsPerSuper;
    add_scaled(isum, s,
               _mm512_cvtepu8_epi32(both_panels8(t.aux[0] + 160 * b + 32 + 8 * j, t.aux[1] + 160 * b + 32 + 8 * j)),
               j == 0);
    if (j == kUnitsPerSuper - 1) finish(t, b, [&](int r) { return _mm512_load_si512(isum[r]); });
  }
  // sums(r): row r's exact super-block sums (isum, or the planes' sums combined in registers).
  template <class Sums>
  void finish(const PairTile& t, int b, Sums sums) {
    const __m512 dw = t.half(b, 0), dmin = t.half(b, 16);
    __m512i mins[4];
    for (int j = 0; j < 4; ++j)
      mins[j] = _mm512_inserti64x4(_mm512_castsi256_si512(YmmColumns::pairs_u8(t.aux[0] + 160 * b + 96 + 16 * j)),
                                   YmmColumns::pairs_u8(t.aux[1] + 160 * b + 96 + 16 * j), 1);
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const int32_t* pairs = t.min_pairs(r) + 4 * b;  // the row's bsums, paired once at quantization
      // Two chains of two (integer sums: exact in any order), half the latency of one chain of four.
      const __m512i m01 = _mm512_dpwssd_epi32(_mm512_madd_epi16(mins[0], _mm512_set1_epi32(pairs[0])), mins[1],
                                              _mm512_set1_epi32(pairs[1]));
      const __m512i m23 = _mm512_dpwssd_epi32(_mm512_madd_epi16(mins[2], _mm512_set1_epi32(pairs[2])), mins[3],
                                              _mm512_set1_epi32(pairs[3]));
      const __m512i msum = _mm512_add_epi32(m01, m23);
      const __m512 dx = _mm512_set1_ps(t.dx(r)[b]);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums(r)), _mm512_mul_ps(dw, dx), acc[r]);
      acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), _mm512_mul_ps(dmin, dx), acc[r]);
    }
  }
};

// q6_K: sub-block j (16 k: the unit) times its signed scale, added up exactly over the super-block; then, as the
// VNNI kernel does, the quants' offset 32 comes off as 32 * sum_j sc_j * bsum_j, and acc += total * (d * dx).
struct SixEpilogue {
  static constexpr int kDepth = 16, kPerSuper = 16;
  __m512 acc[kRows];
  alignas(64) int32_t isum[kRows][16];
  static __m512i scales16(const PairTile& t, int b, int j) {  // sub-block j's 16 columns, as int32
    return _mm512_cvtepi8_epi32(both_panels8(t.aux[0] + 144 * b + 16 + 8 * j, t.aux[1] + 144 * b + 16 + 8 * j));
  }
  void operator()(const PairTile& t, int u, const int32_t* s) {
    const int b = u / kPerSuper, j = u % kPerSuper;
    add_scaled(isum, s, scales16(t, b, j), j == 0);
    if (j == kPerSuper - 1) finish(t, b, [&](int r) { return _mm512_load_si512(isum[r]); });
  }
  template <class Sums>
  void finish(const PairTile& t, int b, Sums sums) {
    const __m512 dw = t.half(b, 0);
    __m512i scale_pairs[kPerSuper / 2];  // column c: sub-block 2i's scale as the low int16, 2i + 1's the high
    for (int i = 0; i < kPerSuper / 2; ++i)
      scale_pairs[i] = _mm512_or_si512(_mm512_and_si512(scales16(t, b, 2 * i), _mm512_set1_epi32(0xffff)),
                                       _mm512_slli_epi32(scales16(t, b, 2 * i + 1), 16));
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      const int32_t* pairs = t.bsum_pairs(r) + 8 * b;  // the row's bsums, paired once at quantization
      __m512i even = _mm512_setzero_si512(), odd = _mm512_setzero_si512();  // two chains: exact either way
      for (int i = 0; i < kPerSuper / 2; i += 2) {
        even = _mm512_dpwssd_epi32(even, scale_pairs[i], _mm512_set1_epi32(pairs[i]));
        odd = _mm512_dpwssd_epi32(odd, scale_pairs[i + 1], _mm512_set1_epi32(pairs[i + 1]));
      }
      const __m512i ssum = _mm512_add_epi32(even, odd);
      const __m512i total = _mm512_sub_epi32(sums(r), _mm512_slli_epi32(ssum, 5));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_mul_ps(dw, _mm512_set1_ps(t.dx(r)[b])), acc[r]);
    }
  }
};

// Columns 8p..8p+15 of rows m_begin..m_end (whole tiles) against panels p and p + 1.
template <bool Signed, class Epilogue>
void panel_pair(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p,
                std::vector<uint8_t>& tiles) {
  const int units = w.K / kUnit, depth = Epilogue::kDepth, steps = w.K / depth;
  const uint8_t* left = w.data.data() + int64_t(p) * w.panel_stride;
  const uint8_t* right = left + w.panel_stride;
  tiles.resize(size_t(units) * kTileBytes + 64);
  uint8_t* weights = tiles.data() + (-reinterpret_cast<uintptr_t>(tiles.data()) & 63);
  for (int u = 0; u < units; ++u) {
    __m512i gl[4], gr[4];
    unit_groups(w, left, u, gl), unit_groups(w, right, u, gr);
    weight_tile(gl, gr, weights + int64_t(kTileBytes) * u);
  }
  const PanelLayout layout = panel_layout(w.type);
  const int n0 = p * QuantMatrix::kPanel, cols = std::min(2 * QuantMatrix::kPanel, w.N - n0);
  const __mmask16 store_mask = static_cast<__mmask16>((1u << cols) - 1);
  auto sums0 = Signed ? signed_sums_0 : unsigned_sums_0;
  auto sums1 = Signed ? signed_sums_1 : unsigned_sums_1;
  alignas(64) int32_t sums[2][kRows * 16];
  for (int m0 = m_begin; m0 + kRows <= m_end; m0 += kRows) {
    const int8_t* acts = x.qs.data() + int64_t(m0) * w.K;
    const PairTile t(left + w.aux_offset, right + w.aux_offset, layout.aux_bytes, x, m0);
    Epilogue e;
    for (__m512& a : e.acc) a = _mm512_setzero_ps();
    // Software-pipelined by two: unit u + 1's tile work is issued before unit u's epilogue.
    sums0(acts, w.K, weights, 0, depth, sums[0]);
    int u = 0;
    for (; u + 2 <= steps; u += 2) {
      sums1(acts, w.K, weights, u + 1, depth, sums[1]);
      e(t, u, sums[0]);
      if (u + 2 < steps) sums0(acts, w.K, weights, u + 2, depth, sums[0]);
      e(t, u + 1, sums[1]);
    }
    if (u < steps) e(t, u, sums[0]);
    for (int r = 0; r < kRows; ++r) _mm512_mask_storeu_ps(out + int64_t(m0 + r) * w.N + n0, store_mask, e.acc[r]);
  }
}

// The K-quants with many row tiles: each unit's quants times their sub-block scales (exact in int16: at most
// 63 * 63, or 63 * 128 for q6_K's signed scales), split as 64 * hi + lo into two byte planes, so that a super-block
// is four full-depth tile products per plane summed in the tiles, and its epilogue runs once, not per sub-block:
// isum = 64 * hi_sums + lo_sums is the same exact integer the VNNI kernel adds up.
// Byte 4c + e: column c's scale byte (signed or not: the bits are copied, scaled_row reads them as it must).
__m512i byte_scales(const uint8_t* left, const uint8_t* right) {
  return _mm512_mullo_epi32(_mm512_cvtepu8_epi32(both_panels8(left, right)), _mm512_set1_epi32(0x01010101));
}

// One 64-byte tile row of quants times its byte scales, into the hi and lo planes' rows.
template <bool SignedScales>
void scaled_row(const uint8_t* q, __m512i scales, uint8_t* hi, uint8_t* lo) {
  const __m512i quants = _mm512_load_si512(q);
  for (int half = 0; half < 2; ++half) {
    const __m256i qh = half ? _mm512_extracti64x4_epi64(quants, 1) : _mm512_castsi512_si256(quants);
    const __m256i sh = half ? _mm512_extracti64x4_epi64(scales, 1) : _mm512_castsi512_si256(scales);
    const __m512i product = _mm512_mullo_epi16(_mm512_cvtepu8_epi16(qh),
                                               SignedScales ? _mm512_cvtepi8_epi16(sh) : _mm512_cvtepu8_epi16(sh));
    _mm256_store_si256(reinterpret_cast<__m256i*>(hi + 32 * half), _mm512_cvtepi16_epi8(_mm512_srai_epi16(product, 6)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(lo + 32 * half),
                       _mm512_cvtepi16_epi8(_mm512_and_si512(product, _mm512_set1_epi16(63))));
  }
}

template <class Epilogue>
void panel_pair_planes(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p,
                       std::vector<uint8_t>& tiles) {
  constexpr bool kSix = std::is_same_v<Epilogue, SixEpilogue>;  // q6_K: signed scales per 16 k
  const int units = w.K / kUnit, supers = w.K / 256;
  const uint8_t* left = w.data.data() + int64_t(p) * w.panel_stride;
  const uint8_t* right = left + w.panel_stride;
  const PanelLayout layout = panel_layout(w.type);
  const uint8_t* aux[2] = {left + w.aux_offset, right + w.aux_offset};
  tiles.resize(size_t(units) * kTileBytes * 2 + kTileBytes + 64);
  uint8_t* hi = tiles.data() + (-reinterpret_cast<uintptr_t>(tiles.data()) & 63);
  uint8_t* lo = hi + int64_t(units) * kTileBytes;
  uint8_t* quants = lo + int64_t(units) * kTileBytes;  // one unit's tile before scaling
  for (int u = 0; u < units; ++u) {
    __m512i gl[4], gr[4];
    unit_groups(w, left, u, gl), unit_groups(w, right, u, gr);
    weight_tile(gl, gr, quants);
    const int b = u / kUnitsPerSuper, j = u % kUnitsPerSuper;
    __m512i scales[2];  // tile rows 0-3 (k 0..15) and 4-7 (k 16..31)
    if constexpr (kSix) {
      for (int h = 0; h < 2; ++h)
        scales[h] = byte_scales(aux[0] + int64_t(layout.aux_bytes) * b + 16 + 8 * (2 * j + h),
                                aux[1] + int64_t(layout.aux_bytes) * b + 16 + 8 * (2 * j + h));
    } else {
      scales[0] = scales[1] = byte_scales(aux[0] + int64_t(layout.aux_bytes) * b + 32 + 8 * j,
                                          aux[1] + int64_t(layout.aux_bytes) * b + 32 + 8 * j);
    }
    for (int row = 0; row < 8; ++row)
      scaled_row<kSix>(quants + 64 * row, scales[row / 4], hi + int64_t(kTileBytes) * u + 64 * row,
                       lo + int64_t(kTileBytes) * u + 64 * row);
  }
  const int n0 = p * QuantMatrix::kPanel, cols = std::min(2 * QuantMatrix::kPanel, w.N - n0);
  const __mmask16 store_mask = static_cast<__mmask16>((1u << cols) - 1);
  alignas(64) int32_t hi_sums[kRows * 16], lo_sums[kRows * 16];
  for (int m0 = m_begin; m0 + kRows <= m_end; m0 += kRows) {
    const int8_t* acts = x.qs.data() + int64_t(m0) * w.K;
    const PairTile t(aux[0], aux[1], layout.aux_bytes, x, m0);
    Epilogue e{};
    for (int b = 0; b < supers; ++b) {
      _tile_zero(0);
      _tile_zero(1);
      for (int v = 0; v < 4; ++v) {  // 64 k a product: two units' tiles lie one after the other
        _tile_loadd(2, acts + 256 * b + 64 * v, w.K);
        _tile_loadd(4, hi + int64_t(kTileBytes) * (8 * b + 2 * v), 64);
        _tile_loadd(5, lo + int64_t(kTileBytes) * (8 * b + 2 * v), 64);
        if constexpr (kSix)
          _tile_dpbssd(0, 2, 4);  // hi is signed with q6_K's signed scales
        else
          _tile_dpbsud(0, 2, 4);
        _tile_dpbsud(1, 2, 5);
      }
      _tile_stored(0, hi_sums, 64);
      _tile_stored(1, lo_sums, 64);
      e.finish(t, b, [&](int r) {  // isum = 64 * hi + lo, in registers
        return _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(hi_sums + 16 * r), 6),
                                _mm512_load_si512(lo_sums + 16 * r));
      });
    }
    for (int r = 0; r < kRows; ++r) _mm512_mask_storeu_ps(out + int64_t(m0 + r) * w.N + n0, store_mask, e.acc[r]);
  }
}

// Row tiles from which a K-quant takes the two planes: below, building them costs more than the epilogues they
// save. q6_K's per-sub-block epilogue is twice q4_K's (16 k, not 32), so its planes pay from two row tiles
// (bench_qmatmul q6_K M=32: 1.35x), q4_K's and q5_K's from four (at two: within the noise).
int planes_from_tiles(GgmlType type) {
  switch (type) {
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
      return 4;
    case GgmlType::Q6_K:
      return 2;
    default:
      return 0;  // never: no planes for the other types
  }
}

using PairFn = void (*)(const QuantizedRows&, const QuantMatrix&, float*, int, int, int, std::vector<uint8_t>&);

PairFn pair_kernel(GgmlType type, bool planes) {
  switch (type) {
    case GgmlType::Q8_0:
      return panel_pair<true, BlockEpilogue<false>>;
    case GgmlType::Q4_0:
      return panel_pair<false, BlockEpilogue<true>>;
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
      return planes ? panel_pair_planes<SuperEpilogue> : panel_pair<false, SuperEpilogue>;
    case GgmlType::Q6_K:
      return planes ? panel_pair_planes<SixEpilogue> : panel_pair<false, SixEpilogue>;
    default:
      return nullptr;
  }
}

}  // namespace

void panels_amx(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin,
                int p_end) {
  const int tiled_end = m_begin + (m_end - m_begin) / kRows * kRows;
  const int row_tiles = (tiled_end - m_begin) / kRows;
  const int from = planes_from_tiles(w.type);
  const bool planes = from > 0 && row_tiles >= from;
  const PairFn pair = pair_kernel(w.type, planes);
  if (!pair || tiled_end == m_begin) return panels_avx512vnni(x, w, out, m_begin, m_end, p_begin, p_end);
  thread_local std::vector<uint8_t> tiles;
  configure_tiles(planes ? 64 : w.type == GgmlType::Q6_K ? SixEpilogue::kDepth : kUnit);
  int p = p_begin;
  for (; p + 2 <= p_end; p += 2) pair(x, w, out, m_begin, tiled_end, p, tiles);
  _tile_release();
  if (p < p_end) panels_avx512vnni(x, w, out, m_begin, tiled_end, p, p_end);
  if (tiled_end < m_end) panels_avx512vnni(x, w, out, tiled_end, m_end, p_begin, p_end);
}

}  // namespace parley::cpu::qmm
