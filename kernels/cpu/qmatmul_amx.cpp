// AMX kernel of the quantized matmul (built with -mamx-tile -mamx-int8 and the AVX-512 VNNI flags; called only
// where the CPU has AMX and Linux granted this process the tile state). q8_0 weights against tiles of 16 rows of
// q8_0 activations: one TDPBSSD per block of 32 gives each (row, column) the exact int32 sum the VNNI kernel
// computes, and the float epilogue is the VNNI kernel's (one multiply-add per block, in k order), so the bits are
// every other ISA's. The rows past the last whole tile, an odd last panel and the other weight types go to the
// AVX-512 VNNI kernels.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cpu/qmatmul_kernels.hpp"

namespace parley::cpu::qmm {
namespace {

constexpr int kRows = 16;                                   // activation rows per tile
constexpr int kBlock = 32;                                  // q8_0's block: the k of one TDPBSSD
constexpr int kTileBytes = 8 * 64;                          // a weight tile: 8 rows of 4 k x 16 columns
constexpr int kPanelBlockBytes = 256, kPanelAuxBytes = 16;  // a q8_0 panel's block: 8 columns x 32, and 8 fp16 d

// Tile registers (GCC's intrinsics want them as literals): sums 0 and 1, activations 2 and 3, weights 4 and 5,
// two of each so that one block's tile work overlaps the previous block's epilogue.
constexpr int kSumTiles[] = {0, 1}, kActTiles[] = {2, 3}, kWeightTiles[] = {4, 5};

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

void configure_tiles() {
  TileConfig c;
  for (int t : kSumTiles) c.rows[t] = kRows, c.colsb[t] = 64;  // 16 rows x 16 int32 columns
  for (int t : kActTiles) c.rows[t] = kRows, c.colsb[t] = kBlock;
  for (int t : kWeightTiles) c.rows[t] = kBlock / 4, c.colsb[t] = 64;
  _tile_loadconfig(&c);
}

// Two panels' block as a TDPBSSD weight tile: row r holds k 4r..4r+3 of each of the 16 columns. A panel's group
// i (8 columns x 8 k, byte 8c + e) holds column c's k 8i..8i+3 in dword 2c and 8i+4..8i+7 in dword 2c + 1.
void weight_tile(const uint8_t* left, const uint8_t* right, uint8_t* tile) {
  const __m512i first = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i second = _mm512_add_epi32(first, _mm512_set1_epi32(1));
  for (int i = 0; i < 4; ++i) {
    const __m512i l = _mm512_loadu_si512(left + 64 * i), r = _mm512_loadu_si512(right + 64 * i);
    _mm512_store_si512(tile + 128 * i, _mm512_permutex2var_epi32(l, first, r));
    _mm512_store_si512(tile + 128 * i + 64, _mm512_permutex2var_epi32(l, second, r));
  }
}

// The exact integer sums of block b for a row tile, left in `sums` ([16 rows][16 columns]), on tile set 0 or 1.
#define PARLEY_AMX_BLOCK_SUMS(name, sum_tile, act_tile, weight_tile)                          \
  inline void name(const int8_t* acts, int K, const uint8_t* weights, int b, int32_t* sums) { \
    _tile_zero(sum_tile);                                                                     \
    _tile_loadd(act_tile, acts + kBlock * b, K);                                              \
    _tile_loadd(weight_tile, weights + int64_t(kTileBytes) * b, 64);                          \
    _tile_dpbssd(sum_tile, act_tile, weight_tile);                                            \
    _tile_stored(sum_tile, sums, 64);                                                         \
  }
PARLEY_AMX_BLOCK_SUMS(block_sums_0, 0, 2, 4)
PARLEY_AMX_BLOCK_SUMS(block_sums_1, 1, 3, 5)
#undef PARLEY_AMX_BLOCK_SUMS

// Columns 8p..8p+15 of rows m_begin..m_end (whole tiles) against panels p and p + 1.
void panel_pair(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p,
                std::vector<uint8_t>& tiles) {
  const int blocks = w.K / kBlock;
  const uint8_t* left = w.data.data() + int64_t(p) * w.panel_stride;
  const uint8_t* right = left + w.panel_stride;
  tiles.resize(size_t(blocks) * kTileBytes + 64);
  uint8_t* weights = tiles.data() + (-reinterpret_cast<uintptr_t>(tiles.data()) & 63);
  for (int b = 0; b < blocks; ++b)
    weight_tile(left + int64_t(kPanelBlockBytes) * b, right + int64_t(kPanelBlockBytes) * b,
                weights + int64_t(kTileBytes) * b);
  const uint8_t* d_left = left + w.aux_offset;
  const uint8_t* d_right = right + w.aux_offset;
  const int n0 = p * QuantMatrix::kPanel, cols = std::min(2 * QuantMatrix::kPanel, w.N - n0);
  const __mmask16 store_mask = static_cast<__mmask16>((1u << cols) - 1);
  alignas(64) int32_t sums[2][kRows * 16];
  for (int m0 = m_begin; m0 + kRows <= m_end; m0 += kRows) {
    const int8_t* acts = x.qs.data() + int64_t(m0) * w.K;
    const float* dx = x.d.data() + int64_t(m0) * blocks;
    __m512 acc[kRows];
    for (__m512& a : acc) a = _mm512_setzero_ps();
    auto epilogue = [&](int b, const int32_t* s) {
      const __m256 lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d_left + kPanelAuxBytes * b)));
      const __m256 hi =
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d_right + kPanelAuxBytes * b)));
      const __m512 dw = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
#pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) {
        const __m512 isum = _mm512_cvtepi32_ps(_mm512_load_si512(s + 16 * r));
        acc[r] = _mm512_fmadd_ps(isum, _mm512_mul_ps(dw, _mm512_set1_ps(dx[int64_t(r) * blocks + b])), acc[r]);
      }
    };
    // Software-pipelined by two: block b + 1's tile work is issued before block b's epilogue.
    block_sums_0(acts, w.K, weights, 0, sums[0]);
    int b = 0;
    for (; b + 2 <= blocks; b += 2) {
      block_sums_1(acts, w.K, weights, b + 1, sums[1]);
      epilogue(b, sums[0]);
      if (b + 2 < blocks) block_sums_0(acts, w.K, weights, b + 2, sums[0]);
      epilogue(b + 1, sums[1]);
    }
    if (b < blocks) epilogue(b, sums[0]);
    for (int r = 0; r < kRows; ++r) _mm512_mask_storeu_ps(out + int64_t(m0 + r) * w.N + n0, store_mask, acc[r]);
  }
}

}  // namespace

void panels_amx(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin,
                int p_end) {
  const int tiled_end = m_begin + (m_end - m_begin) / kRows * kRows;
  if (w.type != quant::GgmlType::Q8_0 || tiled_end == m_begin)
    return panels_avx512vnni(x, w, out, m_begin, m_end, p_begin, p_end);
  thread_local std::vector<uint8_t> tiles;
  configure_tiles();
  int p = p_begin;
  for (; p + 2 <= p_end; p += 2) panel_pair(x, w, out, m_begin, tiled_end, p, tiles);
  _tile_release();
  if (p < p_end) panels_avx512vnni(x, w, out, m_begin, tiled_end, p, p_end);
  if (tiled_end < m_end) panels_avx512vnni(x, w, out, tiled_end, m_end, p_begin, p_end);
}

}  // namespace parley::cpu::qmm
