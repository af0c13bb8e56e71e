// Floats to q3_K (ggml's quantize_row_q3_K_ref without an importance matrix): each 16-element sub-block's scale
// fitted by make_q3_quants' weighted search, the 16 scales quantized to 6 bits against one fp16 super-scale,
// then every element rounded to -4..3 at its sub-block's final scale. The float operations follow ggml's order.
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

// ggml's make_q3_quants(n = 16, nmax = 4, do_rmse = true): L in 0..7 (x ~ scale * (L - 4)); returns the scale.
float fit_q3(const float* x, int8_t* L) {
  constexpr int n = 16, nmax = 4;
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) amax = ax, max = x[i];
  }
  if (amax < kGroupMaxEps) {
    std::fill_n(L, n, int8_t{0});
    return 0.0f;
  }
  const float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);  // ggml's (w * l) * l
  }
  for (int itry = 0; itry < 5; ++itry) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * static_cast<float>(L[i]);
      if (slx > 0) {
        float sl2 = suml2 - w * static_cast<float>(L[i]) * static_cast<float>(L[i]);
        const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(x[i] * sl2 / slx)));
        if (l != L[i]) {
          slx += w * x[i] * static_cast<float>(l);
          sl2 += w * static_cast<float>(l) * static_cast<float>(l);
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(l), sumlx = slx, suml2 = sl2;
            ++changed;
          }
        }
      }
    }
    if (!changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

}  // namespace

void encode_q3_K(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    int8_t L[256];
    float scales[16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_q3(x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > amax) amax = std::fabs(scales[j]), max_scale = scales[j];
    }
    BlockQ3_K b{};
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < 16; ++j) {
        int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));  // ggml keeps the int8 wrap
        l = static_cast<int8_t>(std::max<int>(-32, std::min<int>(31, l)) + 32);
        if (j < 8)
          b.scales[j] = static_cast<uint8_t>(l & 0xF);
        else
          b.scales[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
        b.scales[j % 4 + 8] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
      }
      b.d = float_to_half(1 / iscale);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = half_to_float(b.d) * static_cast<float>(q3_K_scale(b.scales, j));
      if (d == 0.0f) continue;  // the sub-block keeps make_q3_quants' levels, as in ggml
      for (int e = 0; e < 16; ++e)
        L[16 * j + e] = static_cast<int8_t>(std::max(-4, std::min(3, nearest_int(x[16 * j + e] / d))) + 4);
    }
    // The third bit of element j goes to bit j / 32 of hmask[j % 32]; the low two bits four to a byte.
    for (int j = 0; j < 256; ++j)
      if (L[j] > 3) b.hmask[j % 32] |= static_cast<uint8_t>(1 << (j / 32)), L[j] = static_cast<int8_t>(L[j] - 4);
    for (int j = 0; j < 256; j += 128)
      for (int l = 0; l < 32; ++l)
        b.qs[j / 4 + l] =
            static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
    store_block(dst, i, b);
  }
}

}  // namespace parley::quant::detail
