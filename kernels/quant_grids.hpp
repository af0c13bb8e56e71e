// The value grids of ggml's table-lookup quants, defined once below both their decoders (kernels/quant) and the
// quantized matmul's kernels, which look them up with vpshufb.
#pragma once
#include <cstdint>

namespace parley::quant {

// MXFP4's e2m1 values, doubled so they are integers (x = 2^(e - 128) * value).
inline constexpr int8_t kFp4Doubled[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
// IQ4_NL / IQ4_XS's non-linear 4-bit grid.
inline constexpr int8_t kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

}  // namespace parley::quant
