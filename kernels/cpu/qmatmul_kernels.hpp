// What quant_matmul hands each ISA's kernels: the activations, quantized once per call, row by row.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/cpu/quant_matrix.hpp"
#include "kernels/cpu/weight_buffer.hpp"

namespace parley::cpu::qmm {

// Rows of x in the activation format the weight type pairs with: ggml's q8_0 blocks (32) for the 32-element
// types, q8_K super-blocks (256) for the K-quants, floats for f16 and bf16. A row's bytes depend on that row only.
struct QuantizedRows {
  int M = 0, K = 0;
  const float* x = nullptr;  // [M][K] the float rows
  // [M][K] quants, 64-byte aligned: the AMX kernels load their rows as tiles, and a tile row that splits two cache
  // lines made each load several times slower (bench_qmatmul's AMX step table; malloc aligns to 16).
  std::vector<int8_t, HugePageAllocator<int8_t>> qs;
  std::vector<float> d;        // [M][K / block] block scales
  std::vector<int32_t> sums;   // [M][K / 32] each 32-block's sum of quants; q8_K: [M][K / 16] its bsums
  std::vector<float> offsets;  // [M][K / 32] d * sum: the activation side of q4_1's and q5_1's offset term
  // q8_K: [M][K / 64] each 64 k's bsums added in two pairs (k 0-31, 32-63) and packed as int16s (first low), so
  // the K-quants' min term takes them with one vpdpwssd, once per row rather than once per row and panel.
  std::vector<int32_t> min_pairs;
  // q8_K: [M][K / 32] each two neighbouring bsums (16 k each) packed as int16s (first low): q6_K's offset term
  // against its pairs of sub-block scales, one vpdpwssd for two.
  std::vector<int32_t> bsum_pairs;
  // f16/bf16 weights on AVX-512: x in tiles of kTileRows rows, k-major ([ceil(M / 16)][K][16], zero past row M),
  // so that a tile's 16 rows at one k are one cache line read from one pointer; empty when not used.
  static constexpr int kTileRows = 16;
  std::vector<float> tiles;
  int blocks_per_row() const { return static_cast<int>(d.size()) / M; }
  int sums_per_row() const { return static_cast<int>(sums.size()) / M; }
  int min_pairs_per_row() const { return K / 64; }
  int bsum_pairs_per_row() const { return K / 32; }
};

// One row's q8_0 blocks (with d * sum where offsets is not null) and q8_K super-blocks, as the scalar encoders
// in qmatmul.cpp compute them (the same bytes), with AVX-512.
void quantize_row_q8_0_avx512(const float* x, int K, int8_t* qs, float* d, int32_t* sums, float* offsets);
void quantize_row_q8_K_avx512(const float* x, int K, int8_t* qs, float* d, int32_t* bsums);
// The same with AVX2.
void quantize_row_q8_0_avx2(const float* x, int K, int8_t* qs, float* d, int32_t* sums, float* offsets);
void quantize_row_q8_K_avx2(const float* x, int K, int8_t* qs, float* d, int32_t* bsums);

// out[m][n] for rows [m_begin, m_end) and panels [p_begin, p_end) of w, one definition per ISA's translation unit.
using PanelsFn = void (*)(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin,
                          int p_end);
void panels_generic(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin,
                    int p_end);
void panels_avx2(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin,
                 int p_end);
void panels_avx512(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin,
                   int p_end);
void panels_avx512vnni(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin,
                       int p_end);
void panels_amx(const QuantizedRows& x, const QuantMatrix& w, float* out, int m_begin, int m_end, int p_begin,
                int p_end);

}  // namespace parley::cpu::qmm
