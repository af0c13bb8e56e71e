// Weight matrices kept in their file's ggml type, repacked once at load for the CPU's integer dot products.
//
// The layout puts one output column in each float lane: a panel holds kPanel = 8 columns, and every 32
// elements of k become four groups of 64 bytes, byte 8c + e holding column c's element 8g + e (f16 and bf16:
// [k][8 columns] of 16-bit values). Each column's
// integer sums come out in its own lane, so the float epilogue is one multiply-add chain per output element
// over the blocks in k order, whatever the ISA, the batch or the thread split (no horizontal sums).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/weight_buffer.hpp"
#include "kernels/quant/ggml_types.hpp"

namespace parley::cpu {

enum class Isa;

using ByteBuffer = std::vector<uint8_t, HugePageAllocator<uint8_t>>;

// Per panel: the blocks' quants in k order (quant stream), then their scales (aux stream), padded to 64 bytes.
// The last panel's missing columns are zero, so they add nothing and are never stored.
struct QuantMatrix {
  quant::GgmlType type = quant::GgmlType::F32;  // F32: empty
  int N = 0, K = 0;
  size_t panel_stride = 0;  // bytes from one panel to the next
  size_t aux_offset = 0;    // where a panel's scales start
  // q8_0 packed for vpdpbusd (u8 x s8): each quant w stored as w ^ 0x80, i.e. w + 128 as u8, so the VNNI kernel
  // needs no per-use flip. Every ISA reads either convention; the other one costs an xor per group and row tile.
  bool biased = false;
  ByteBuffer data;
  static constexpr int kPanel = 8;
  int panels() const { return (N + kPanel - 1) / kPanel; }
  size_t bytes() const { return data.size(); }
};

// One panel block's bytes: `block` elements of k for the panel's 8 columns.
struct PanelLayout {
  int block;        // elements per block (32, 256; 1 for f16 and bf16)
  int quant_bytes;  // quant stream bytes per block
  int aux_bytes;    // aux stream bytes per block
};

bool quant_matmul_supported(quant::GgmlType type);
// Throws std::invalid_argument naming the type when there is no kernel for it.
PanelLayout panel_layout(quant::GgmlType type);

// The kernel variants, chosen at run time; the bits are the same in all of them.
enum class QuantIsa { Generic, Avx2, Avx512, Avx512Vnni, Amx };  // Amx: q8_0 on tiles, the rest as Avx512Vnni

// rows: N rows of quant::row_bytes(type, K) bytes exactly as a GGUF file stores them (any alignment), packed for
// the kernels of `isa` (q8_0: biased for Avx512Vnni and Amx), by default those quant_isa_for(Isa::Auto) picks.
// Throws std::invalid_argument for a type without a kernel (naming it), or a K that is not whole blocks.
QuantMatrix pack_quant_matrix(quant::GgmlType type, const void* rows, int N, int K);
QuantMatrix pack_quant_matrix(quant::GgmlType type, const void* rows, int N, int K, QuantIsa isa);
// Row `row` of w back as quant::row_bytes(w.type, w.K) bytes of ggml blocks, exactly as the file held them.
void quant_matrix_row(const QuantMatrix& w, int row, uint8_t* out);

std::string quant_isa_name(QuantIsa isa);
bool quant_isa_supported(QuantIsa isa);
QuantIsa quant_isa_for(Isa isa);  // the best variant an Isa's instruction sets allow on this CPU (tiles: Isa::Amx only)

// out[M][N] = x[M][K] * w^T on `threads` threads (split over panels only). CpuBackend::matmul calls this.
void quant_matmul(QuantIsa isa, int threads, const float* x, const QuantMatrix& w, float* out, int M);

}  // namespace parley::cpu
