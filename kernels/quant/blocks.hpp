// ggml's block layouts (ggml-common.h), byte for byte: fp16 fields hold IEEE binary16 bits.
#pragma once
#include <cstdint>

#include "kernels/quant_grids.hpp"

namespace parley::quant {

// x = d * (q - 8), q in 0..15; qs[j] holds element j (low nibble) and j + 16 (high nibble).
struct BlockQ4_0 {
  static constexpr int kElements = 32;
  uint16_t d;
  uint8_t qs[16];
};
// x = d * q + m, q in 0..15.
struct BlockQ4_1 {
  static constexpr int kElements = 32;
  uint16_t d, m;
  uint8_t qs[16];
};
// x = d * (q - 16), q in 0..31; bit j of qh is the fifth bit of element j.
struct BlockQ5_0 {
  static constexpr int kElements = 32;
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[16];
};
struct BlockQ5_1 {
  static constexpr int kElements = 32;
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
struct BlockQ8_0 {
  static constexpr int kElements = 32;
  uint16_t d;
  int8_t qs[32];
};
// An activation block: s = d * sum(qs), for the dot products with q4_1 and q5_1.
struct BlockQ8_1 {
  static constexpr int kElements = 32;
  uint16_t d, s;
  int8_t qs[32];
};
// Sixteen sub-blocks of 16: x = d * (sc - 32) * (q - 4), q in 0..7 split into two low bits (qs) and a high bit
// (hmask), sc 6 bits packed in 12 bytes.
struct BlockQ3_K {
  static constexpr int kElements = 256;
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;
};
// Sub-block j's scale sc - 32 (-32..31): its low nibble in byte j (j < 8) or the high one of byte j - 8, its two
// high bits in byte 8 + j % 4 at bit 2 * (j / 4).
inline int q3_K_scale(const uint8_t* scales, int j) {
  const int low = j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4;
  return (low | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}
// Eight sub-blocks of 32: x = d * sc * q - dmin * m, with 6-bit sc and m packed in scales.
struct BlockQ4_K {
  static constexpr int kElements = 256;
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[128];
};
struct BlockQ5_K {
  static constexpr int kElements = 256;
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
// Sixteen sub-blocks of 16: x = d * scales[j] * (q - 32), q in 0..63.
struct BlockQ6_K {
  static constexpr int kElements = 256;
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
// The activation block of the K-quant dot products: a float scale, and the sums of each 16 quants.
struct BlockQ8_K {
  static constexpr int kElements = 256;
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};

// Eight sub-blocks of 32: x = d * (ls - 32) * kIq4nl[q], ls 6 bits (low nibble in scales_l, two high bits in
// scales_h); qs[16 j + i] holds element 32 j + i (low nibble) and 32 j + 16 + i (high nibble).
struct BlockIq4Xs {
  static constexpr int kElements = 256;
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[4];
  uint8_t qs[128];
};
inline int iq4_xs_scale(const BlockIq4Xs& b, int j) {  // ls - 32 of sub-block j
  return (((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xf) | (((b.scales_h >> (2 * j)) & 3) << 4)) - 32;
}

// OCP microscaling FP4 (gpt-oss's experts): x = 2^(e - 128) * kFp4Doubled[q], the e2m1 values doubled so they are
// integers; qs[j] holds element j (low nibble) and j + 16 (high nibble).
struct BlockMxfp4 {
  static constexpr int kElements = 32;
  uint8_t e;  // E8M0
  uint8_t qs[16];
};

// ggml's GGML_E8M0_TO_FP32_HALF: 2^(e - 128), subnormal for e < 2.
inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23;
  float f;
  static_assert(sizeof(f) == sizeof(bits));
  __builtin_memcpy(&f, &bits, sizeof(f));
  return f;
}

static_assert(sizeof(BlockMxfp4) == 17 && sizeof(BlockIq4Xs) == 136);
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

}  // namespace parley::quant
