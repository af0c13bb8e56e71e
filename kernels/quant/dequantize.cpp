// Block formats to floats: each loop is ggml's dequantize_row_* with the same float operation order.
#include <cstring>
#include <stdexcept>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/half.hpp"
#include "kernels/quant/quantize.hpp"

namespace parley::quant {

namespace {

template <typename Block>
Block load_block(const void* src, int64_t i) {
  Block block;
  std::memcpy(&block, static_cast<const uint8_t*>(src) + i * sizeof(Block), sizeof(Block));
  return block;
}

void store_floats(float* dst, const float* values, int count) { std::memcpy(dst, values, count * sizeof(float)); }

void decode(const BlockQ4_0& b, float* y) {
  const float d = half_to_float(b.d);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((b.qs[j] & 0x0f) - 8) * d;
    y[j + 16] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
  }
}

void decode(const BlockQ4_1& b, float* y) {
  const float d = half_to_float(b.d), m = half_to_float(b.m);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(b.qs[j] & 0x0f) * d + m;
    y[j + 16] = static_cast<float>(b.qs[j] >> 4) * d + m;
  }
}

uint32_t high_bits(const uint8_t (&qh)[4]) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof(bits));
  return bits;
}

// The fifth bits: bit j of qh for element j, bit j + 16 for element j + 16.
int fifth_bit_low(uint32_t qh, int j) { return static_cast<int>((qh >> j) & 1u) << 4; }
int fifth_bit_high(uint32_t qh, int j) { return static_cast<int>((qh >> (j + 16)) & 1u) << 4; }

void decode(const BlockQ5_0& b, float* y) {
  const float d = half_to_float(b.d);
  const uint32_t qh = high_bits(b.qh);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(((b.qs[j] & 0x0f) | fifth_bit_low(qh, j)) - 16) * d;
    y[j + 16] = static_cast<float>(((b.qs[j] >> 4) | fifth_bit_high(qh, j)) - 16) * d;
  }
}

void decode(const BlockQ5_1& b, float* y) {
  const float d = half_to_float(b.d), m = half_to_float(b.m);
  const uint32_t qh = high_bits(b.qh);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((b.qs[j] & 0x0f) | fifth_bit_low(qh, j)) * d + m;
    y[j + 16] = static_cast<float>((b.qs[j] >> 4) | fifth_bit_high(qh, j)) * d + m;
  }
}

void decode(const BlockQ8_0& b, float* y) {
  const float d = half_to_float(b.d);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
}

// Sub-block j's 6-bit scale and min: j < 4 in the low bits of bytes j and j + 4, the rest split across
// a nibble of byte j + 4 and the top two bits of bytes j - 4 and j (ggml's get_scale_min_k4).
void scale_min_k4(int j, const uint8_t* q, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = static_cast<uint8_t>((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
    min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void decode(const BlockQ4_K& b, float* y) {
  const float d = half_to_float(b.d), dmin = half_to_float(b.dmin);
  const uint8_t* q = b.qs;
  for (int sub = 0; sub < 8; sub += 2, q += 32) {
    uint8_t scale, min;
    scale_min_k4(sub, b.scales, scale, min);
    const float d1 = d * static_cast<float>(scale), m1 = dmin * static_cast<float>(min);
    scale_min_k4(sub + 1, b.scales, scale, min);
    const float d2 = d * static_cast<float>(scale), m2 = dmin * static_cast<float>(min);
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0f) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
  }
}

void decode(const BlockQ5_K& b, float* y) {
  const float d = half_to_float(b.d), dmin = half_to_float(b.dmin);
  const uint8_t* ql = b.qs;
  uint8_t bit_low = 1, bit_high = 2;  // qh bit of the pair of sub-blocks being decoded
  for (int sub = 0; sub < 8; sub += 2, ql += 32, bit_low <<= 2, bit_high <<= 2) {
    uint8_t scale, min;
    scale_min_k4(sub, b.scales, scale, min);
    const float d1 = d * static_cast<float>(scale), m1 = dmin * static_cast<float>(min);
    scale_min_k4(sub + 1, b.scales, scale, min);
    const float d2 = d * static_cast<float>(scale), m2 = dmin * static_cast<float>(min);
    for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0x0f) + (b.qh[l] & bit_low ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + (b.qh[l] & bit_high ? 16 : 0)) - m2;
  }
}

// ggml's dequantize_row_q3_K: the scales unpacked four bytes at a time, then 16 runs of 16 elements.
void decode(const BlockQ3_K& b, float* y) {
  uint32_t aux[4];
  std::memcpy(aux, b.scales, 12);
  const uint32_t tmp = aux[2], kmask1 = 0x03030303u, kmask2 = 0x0f0f0f0fu;
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  int8_t scales[16];
  std::memcpy(scales, aux, 16);
  const float d_all = half_to_float(b.d);
  const uint8_t* q = b.qs;
  int is = 0;
  uint8_t m = 1;
  for (int half = 0; half < 2; ++half, q += 32)
    for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1))
      for (int part = 0; part < 2; ++part) {
        const float dl = d_all * static_cast<float>(scales[is++] - 32);
        for (int l = 16 * part; l < 16 * part + 16; ++l)
          *y++ = dl * static_cast<float>(((q[l] >> shift) & 3) - ((b.hmask[l] & m) ? 0 : 4));
      }
}

void decode(const BlockQ6_K& b, float* y) {
  const float d = half_to_float(b.d);
  const uint8_t* ql = b.ql;
  const uint8_t* qh = b.qh;
  const int8_t* sc = b.scales;
  // Each half of the block: 128 elements as four runs of 32, low nibbles in ql, two high bits each in qh.
  for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
      y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
      y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
      y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
    }
  }
}

void decode(const BlockIq4Xs& b, float* y) {
  const float d = half_to_float(b.d);
  for (int j = 0; j < 8; ++j, y += 32) {
    const float dl = d * static_cast<float>(iq4_xs_scale(b, j));
    for (int i = 0; i < 16; ++i) {
      y[i] = dl * static_cast<float>(kIq4nl[b.qs[16 * j + i] & 0xf]);
      y[i + 16] = dl * static_cast<float>(kIq4nl[b.qs[16 * j + i] >> 4]);
    }
  }
}

void decode(const BlockMxfp4& b, float* y) {
  const float d = e8m0_half(b.e);
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(kFp4Doubled[b.qs[j] & 0x0f]) * d;
    y[j + 16] = static_cast<float>(kFp4Doubled[b.qs[j] >> 4]) * d;
  }
}

void decode(const BlockQ8_K& b, float* y) {
  for (int j = 0; j < 256; ++j) y[j] = b.d * static_cast<float>(b.qs[j]);
}

template <typename Block>
void decode_blocks(const void* src, float* dst, int64_t n) {
  float values[Block::kElements];
  for (int64_t i = 0; i < n / Block::kElements; ++i) {
    decode(load_block<Block>(src, i), values);
    store_floats(dst + i * Block::kElements, values, Block::kElements);
  }
}

template <float (*Convert)(uint16_t)>
void decode_halves(const void* src, float* dst, int64_t n) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, sizeof(h));
    dst[i] = Convert(h);
  }
}

}  // namespace

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  row_bytes(type, n);  // refuses a partial block
  switch (type) {
    case GgmlType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::F16:
      return decode_halves<half_to_float>(src, dst, n);
    case GgmlType::BF16:
      return decode_halves<bf16_to_float>(src, dst, n);
    case GgmlType::Q4_0:
      return decode_blocks<BlockQ4_0>(src, dst, n);
    case GgmlType::Q4_1:
      return decode_blocks<BlockQ4_1>(src, dst, n);
    case GgmlType::Q5_0:
      return decode_blocks<BlockQ5_0>(src, dst, n);
    case GgmlType::Q5_1:
      return decode_blocks<BlockQ5_1>(src, dst, n);
    case GgmlType::Q8_0:
      return decode_blocks<BlockQ8_0>(src, dst, n);
    case GgmlType::Q3_K:
      return decode_blocks<BlockQ3_K>(src, dst, n);
    case GgmlType::Q4_K:
      return decode_blocks<BlockQ4_K>(src, dst, n);
    case GgmlType::Q5_K:
      return decode_blocks<BlockQ5_K>(src, dst, n);
    case GgmlType::Q6_K:
      return decode_blocks<BlockQ6_K>(src, dst, n);
    case GgmlType::Q8_K:
      return decode_blocks<BlockQ8_K>(src, dst, n);
    case GgmlType::MXFP4:
      return decode_blocks<BlockMxfp4>(src, dst, n);
    case GgmlType::IQ4_XS:
      return decode_blocks<BlockIq4Xs>(src, dst, n);
    case GgmlType::Q8_1:
      break;
  }
  throw std::invalid_argument(std::string("dequantize_row: ggml has no decoder for ") + traits(type).name);
}

}  // namespace parley::quant
