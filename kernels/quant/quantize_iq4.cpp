// Floats to iq4_xs (ggml's quantize_row_iq4_nl_impl for 256-blocks of eight 32-element sub-blocks, no importance
// matrix): each sub-block's scale searched over 15 candidate steps of the non-linear grid kIq4nl, the eight scales
// quantized to 6 bits against one fp16 super-scale, every element then the grid point nearest it. The float
// operations follow ggml's order.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/encoders.hpp"
#include "kernels/quant/half.hpp"
#include "kernels/quant/quantize.hpp"

namespace parley::quant::detail {
namespace {

constexpr float kGroupMaxEps = 1e-15f;
constexpr int kTries = 7;

// ggml's best_index_int8: the grid point nearest x (the lower of two equally near).
int nearest_grid(float x) {
  if (x <= kIq4nl[0]) return 0;
  if (x >= kIq4nl[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < kIq4nl[mid])
      hi = mid;
    else
      lo = mid;
  }
  return x - kIq4nl[hi - 1] < kIq4nl[hi] - x ? hi - 1 : hi;
}

// The weighted least-squares scale of one 32-element sub-block, the best of the grid steps tried.
float fit_sub_block(const float* x) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j)
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
  if (amax < kGroupMaxEps) return 0.0f;
  auto sums = [&](float id, float& sumqx, float& sumq2) {
    sumqx = sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const float q = kIq4nl[nearest_grid(id * x[j])], w = x[j] * x[j];
      sumqx += w * q * x[j];
      sumq2 += w * q * q;
    }
  };
  float d = -max / kIq4nl[0], sumqx, sumq2;
  sums(1 / d, sumqx, sumq2);
  d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
  float best = d * sumqx;
  for (int itry = -kTries; itry <= kTries; ++itry) {
    sums(static_cast<float>(itry + kIq4nl[0]) / max, sumqx, sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) d = sumqx / sumq2, best = d * sumqx;
  }
  return d;
}

}  // namespace

void encode_iq4_xs(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    float scales[8], max_scale = 0, amax_scale = 0;
    for (int j = 0; j < 8; ++j) {
      scales[j] = fit_sub_block(x + 32 * j);
      if (std::fabs(scales[j]) > amax_scale) amax_scale = std::fabs(scales[j]), max_scale = scales[j];
    }
    BlockIq4Xs b{};
    const float d = -max_scale / 32;
    b.d = float_to_half(d);
    const float id = d != 0.0f ? 1 / d : 0.0f;
    for (int j = 0; j < 8; ++j) {
      const int l = std::max(-32, std::min(31, nearest_int(id * scales[j])));
      const float dl = d * static_cast<float>(l), idl = dl != 0.0f ? 1 / dl : 0.0f;
      for (int e = 0; e < 16; ++e) {
        const int lo = nearest_grid(idl * x[32 * j + e]), hi = nearest_grid(idl * x[32 * j + 16 + e]);
        b.qs[16 * j + e] = static_cast<uint8_t>(lo | (hi << 4));
      }
      const int ls = l + 32;
      b.scales_l[j / 2] |= static_cast<uint8_t>((ls & 0xf) << (4 * (j % 2)));
      b.scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * j));
    }
    store_block(dst, i, b);
  }
}

}  // namespace parley::quant::detail
