// Floats to the 32-element formats (ggml's quantize_row_q{4,5,8}_{0,1}_ref), and the quantize_row dispatch.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/encoders.hpp"
#include "kernels/quant/half.hpp"
#include "kernels/quant/quantize.hpp"

namespace parley::quant {
namespace detail {

namespace {

// The element of largest magnitude, the first of equals (ggml's amax/max scan); 0 for an all-zero block.
float signed_absmax(const float* x, int count) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < count; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void min_max(const float* x, int count, float& min, float& max) {
  min = FLT_MAX;
  max = -FLT_MAX;
  for (int j = 0; j < count; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
}

// ggml's `d ? 1.0f/d : 0.0f`: the multiplier that maps a block onto its integer range.
float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// C's float -> int conversion truncates toward zero; ggml's values here are always in range.
int truncate(float v) { return static_cast<int>(v); }

}  // namespace

void encode_q4_0(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    BlockQ4_0 b{};
    const float d = signed_absmax(x, 32) / -8.0f;  // the extreme element maps to -8
    const float id = inverse_or_zero(d);
    b.d = float_to_half(d);
    for (int j = 0; j < 16; ++j) {
      const int low = std::min(15, truncate(x[j] * id + 8.5f));
      const int high = std::min(15, truncate(x[j + 16] * id + 8.5f));
      b.qs[j] = static_cast<uint8_t>(low | (high << 4));
    }
    store_block(dst, i, b);
  }
}

void encode_q4_1(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    BlockQ4_1 b{};
    float min, max;
    min_max(x, 32, min, max);
    const float d = (max - min) / 15.0f;
    const float id = inverse_or_zero(d);
    b.d = float_to_half(d);
    b.m = float_to_half(min);
    for (int j = 0; j < 16; ++j) {
      const int low = std::min(15, truncate((x[j] - min) * id + 0.5f));
      const int high = std::min(15, truncate((x[j + 16] - min) * id + 0.5f));
      b.qs[j] = static_cast<uint8_t>(low | (high << 4));
    }
    store_block(dst, i, b);
  }
}

namespace {

// Five-bit quants: low nibbles in qs, the fifth bit of element j in bit j of qh.
template <typename Block>
void pack_5bit(const int (&q)[32], Block& b) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    b.qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4));
    qh |= static_cast<uint32_t>((q[j] & 0x10) >> 4) << j;
    qh |= static_cast<uint32_t>((q[j + 16] & 0x10) >> 4) << (j + 16);
  }
  std::memcpy(b.qh, &qh, sizeof(qh));
}

}  // namespace

void encode_q5_0(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    BlockQ5_0 b{};
    const float d = signed_absmax(x, 32) / -16.0f;
    const float id = inverse_or_zero(d);
    b.d = float_to_half(d);
    int q[32];
    for (int j = 0; j < 32; ++j) q[j] = std::min(31, truncate(x[j] * id + 16.5f));
    pack_5bit(q, b);
    store_block(dst, i, b);
  }
}

void encode_q5_1(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    BlockQ5_1 b{};
    float min, max;
    min_max(x, 32, min, max);
    const float d = (max - min) / 31.0f;
    const float id = inverse_or_zero(d);
    b.d = float_to_half(d);
    b.m = float_to_half(min);
    int q[32];
    for (int j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>(truncate((x[j] - min) * id + 0.5f));
    pack_5bit(q, b);
    store_block(dst, i, b);
  }
}

namespace {

// Q8_0 and Q8_1 share the scale (absmax / 127) and round half away from zero, as roundf does.
template <typename Block>
float encode_8bit(const float* x, Block& b) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = inverse_or_zero(d);
  b.d = float_to_half(d);
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(std::round(x[j] * id));
  return d;
}

}  // namespace

void encode_q8_0(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    BlockQ8_0 b{};
    encode_8bit(x, b);
    store_block(dst, i, b);
  }
}

void encode_q8_1(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    BlockQ8_1 b{};
    const float d = encode_8bit(x, b);
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += b.qs[j];
    b.s = float_to_half(static_cast<float>(sum) * d);
    store_block(dst, i, b);
  }
}

namespace {

// The nearest doubled e2m1 value to x / d, the first of equals (ggml's best_index_mxfp4).
uint8_t nearest_fp4(float x, float d) {
  uint8_t best = 0;
  float best_err = std::fabs(static_cast<float>(kFp4Doubled[0]) * d - x);
  for (uint8_t i = 1; i < 16; ++i) {
    const float err = std::fabs(static_cast<float>(kFp4Doubled[i]) * d - x);
    if (err < best_err) best = i, best_err = err;
  }
  return best;
}

}  // namespace

// ggml's quantize_row_mxfp4_ref: the shared exponent puts the block's largest magnitude in [4, 8) of the doubled
// values (floor(log2(amax)) - 2), then each element takes its nearest.
void encode_mxfp4(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j)
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    BlockMxfp4 b{};
    b.e = amax > 0.0f ? static_cast<uint8_t>(std::floor(std::log2(amax)) - 2 + 127) : 0;
    const float d = e8m0_half(b.e);
    for (int j = 0; j < 16; ++j)
      b.qs[j] = static_cast<uint8_t>(nearest_fp4(x[j], d) | (nearest_fp4(x[j + 16], d) << 4));
    store_block(dst, i, b);
  }
}

}  // namespace detail

namespace {

template <uint16_t (*Convert)(float)>
void encode_halves(const float* x, void* dst, int64_t n) {
  auto* bytes = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = Convert(x[i]);
    std::memcpy(bytes + 2 * i, &h, sizeof(h));
  }
}

}  // namespace

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
  const size_t bytes = row_bytes(type, n);  // refuses a partial block
  switch (type) {
    case GgmlType::F32:
      std::memcpy(dst, src, bytes);
      return;
    case GgmlType::F16:
      return encode_halves<float_to_half>(src, dst, n);
    case GgmlType::BF16:
      return encode_halves<float_to_bf16>(src, dst, n);
    case GgmlType::Q4_0:
      return detail::encode_q4_0(src, dst, n);
    case GgmlType::Q4_1:
      return detail::encode_q4_1(src, dst, n);
    case GgmlType::Q5_0:
      return detail::encode_q5_0(src, dst, n);
    case GgmlType::Q5_1:
      return detail::encode_q5_1(src, dst, n);
    case GgmlType::Q8_0:
      return detail::encode_q8_0(src, dst, n);
    case GgmlType::Q8_1:
      return detail::encode_q8_1(src, dst, n);
    case GgmlType::Q3_K:
      return detail::encode_q3_K(src, dst, n);
    case GgmlType::Q4_K:
      return detail::encode_q4_K(src, dst, n);
    case GgmlType::Q5_K:
      return detail::encode_q5_K(src, dst, n);
    case GgmlType::Q6_K:
      return detail::encode_q6_K(src, dst, n);
    case GgmlType::Q8_K:
      return detail::encode_q8_K(src, dst, n);
    case GgmlType::MXFP4:
      return detail::encode_mxfp4(src, dst, n);
    case GgmlType::IQ4_XS:
      return detail::encode_iq4_xs(src, dst, n);
  }
  throw std::invalid_argument("quantize_row: unsupported ggml type " + ggml_type_name(static_cast<uint32_t>(type)));
}

size_t quantize_chunk(GgmlType type, const float* src, void* dst, int64_t start, int64_t nrows, int64_t n_per_row) {
  const size_t bytes_per_row = row_bytes(type, n_per_row);
  if (n_per_row <= 0 || nrows < 0 || start < 0 || start % n_per_row != 0)
    throw std::invalid_argument("quantize_chunk: start " + std::to_string(start) + " is not a row start of rows of " +
                                std::to_string(n_per_row));
  // Every format here encodes block by block, so the rows of a chunk are one long row.
  quantize_row(type, src + start, static_cast<uint8_t*>(dst) + start / n_per_row * bytes_per_row, nrows * n_per_row);
  return static_cast<size_t>(nrows) * bytes_per_row;
}

}  // namespace parley::quant
