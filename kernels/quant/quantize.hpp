// Rows of floats to and from ggml's block formats, with the bytes and floats ggml's reference code produces
// (ggml-quants.c, without an importance matrix).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/quant/ggml_types.hpp"

namespace parley::quant {

// Decodes n elements (a whole number of blocks) of type from src (any alignment) into dst, as ggml's to_float.
// q8_1 has no decoder in ggml and is refused (std::invalid_argument), as is an n that is not whole blocks.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

// Encodes n floats (a whole number of blocks) into row_bytes(type, n) bytes at dst (any alignment): ggml's
// quantize_row_*_ref, ggml_fp32_to_fp16_row, ggml_fp32_to_bf16_row_ref. Inputs must be finite.
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);

// ggml_quantize_chunk without an importance matrix: rows [start / n_per_row, + nrows) of src, written at the
// same rows of dst. start is an element offset and a multiple of n_per_row. Returns the bytes written.
size_t quantize_chunk(GgmlType type, const float* src, void* dst, int64_t start, int64_t nrows, int64_t n_per_row);

// The rounding every K-quant uses: round to nearest, ties to even, via the float adder
// (1.5 * 2^23 added leaves the integer in the low mantissa bits). Exact for |value| < 2^22, as in ggml.
int nearest_int(float value);

}  // namespace parley::quant
