// The per-format encoders behind quantize_row: n is a whole number of blocks, dst any alignment.
#pragma once
#include <cstdint>
#include <cstring>

namespace parley::quant::detail {

void encode_q4_0(const float* x, void* dst, int64_t n);
void encode_q4_1(const float* x, void* dst, int64_t n);
void encode_q5_0(const float* x, void* dst, int64_t n);
void encode_q5_1(const float* x, void* dst, int64_t n);
void encode_q8_0(const float* x, void* dst, int64_t n);
void encode_q8_1(const float* x, void* dst, int64_t n);
void encode_q3_K(const float* x, void* dst, int64_t n);
void encode_q4_K(const float* x, void* dst, int64_t n);
void encode_q5_K(const float* x, void* dst, int64_t n);
void encode_q6_K(const float* x, void* dst, int64_t n);
void encode_q8_K(const float* x, void* dst, int64_t n);
void encode_mxfp4(const float* x, void* dst, int64_t n);
void encode_iq4_xs(const float* x, void* dst, int64_t n);

template <typename Block>
void store_block(void* dst, int64_t i, const Block& block) {
  std::memcpy(static_cast<uint8_t*>(dst) + i * sizeof(Block), &block, sizeof(Block));
}

}  // namespace parley::quant::detail
