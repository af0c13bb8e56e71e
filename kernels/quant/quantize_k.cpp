// Floats to the K-quants (ggml's quantize_row_q{4,5,6,8}_K_ref): a scale (and min) per sub-block fitted by
// ggml's searches, then the scales themselves quantized to 6 or 8 bits against one fp16 super-scale.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/encoders.hpp"
#include "kernels/quant/half.hpp"
#include "kernels/quant/quantize.hpp"

namespace parley::quant {

int nearest_int(float value) {
  const float shifted = value + 12582912.0f;
  return (std::bit_cast<int32_t>(shifted) & 0x007fffff) - 0x00400000;
}

namespace detail {

namespace {

constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS: a sub-block below it is all zeros

struct ScaleMin {
  float scale, min;  // x ~ scale * q - min, min >= 0
};

// ggml's make_qkx2_quants: x ~ scale * L + offset with L in 0..nmax, offset <= 0 (returned negated as min),
// by weighted least squares over nstep + 1 candidate grids around the min-max fit.
ScaleMin fit_scale_min(const float* x, const float* weights, int n, int nmax, uint8_t* L, float rmin, float rdelta,
                       int nstep) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, 0);
    return {0.0f, -min};
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
    const float diff = scale * static_cast<float>(L[i]) + min - x[i];
    best_error += weights[i] * (diff * diff);
  }
  uint8_t candidate[32];
  for (int step = 0; step <= nstep; ++step) {
    iscale = (rmin + rdelta * static_cast<float>(step) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
      candidate[i] = static_cast<uint8_t>(l);
      const float wl = weights[i] * static_cast<float>(l);
      sum_l += wl;
      sum_l2 += wl * static_cast<float>(l);
      sum_xl += wl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {  // a positive offset is not representable: refit the scale through zero
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float error = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * static_cast<float>(candidate[i]) + this_min - x[i];
        error += weights[i] * (diff * diff);
      }
      if (error < best_error) {
        std::copy(candidate, candidate + n, L);
        best_error = error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  return {scale, -min};
}

// ggml's make_qx_quants with rmse_type 1 and no importance: x ~ scale * (L - nmax) with L in 0..2*nmax-1,
// weights x^2, trying 19 grids around the absmax fit. Returns the scale (negative when max is positive).
float fit_scale_symmetric(const float* x, int n, int nmax, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  auto level = [nmax](float scaled) { return std::clamp(nearest_int(scaled), -nmax, nmax - 1); };
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = level(iscale * x[i]);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = level(iscale * x[i]);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(nmax + level(iscale * x[i]));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Eight 6-bit (scale, min) pairs in 12 bytes, the layout scale_min_k4 in dequantize.cpp reads.
void pack_scales_k4(const uint8_t (&scale)[8], const uint8_t (&min)[8], uint8_t* q) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      q[j] = scale[j];
      q[j + 4] = min[j];
    } else {
      q[j + 4] = static_cast<uint8_t>((scale[j] & 0x0f) | ((min[j] & 0x0f) << 4));
      q[j - 4] |= static_cast<uint8_t>((scale[j] >> 4) << 6);
      q[j] |= static_cast<uint8_t>((min[j] >> 4) << 6);
    }
  }
}

// Q4_K and Q5_K: per 32-element sub-block a (scale, min) fit, both quantized to 6 bits against the block's
// largest, then each element requantized against the scales as stored.
template <typename Block>
void encode_scale_min_block(const float* x, int nmax, float rmin, int nstep, Block& b, uint8_t (&L)[256]) {
  ScaleMin fits[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* sub = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += sub[l] * sub[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    float weights[32];
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(sub[l]);
    fits[j] = fit_scale_min(sub, weights, 32, nmax, L + 32 * j, rmin, 0.1f, nstep);
    if (fits[j].scale > max_scale) max_scale = fits[j].scale;
    if (fits[j].min > max_min) max_min = fits[j].min;
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t scales[8], mins[8];
  for (int j = 0; j < 8; ++j) {
    // ggml stores nearest_int in a uint8_t before clamping: the wrap is kept.
    scales[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * fits[j].scale)));
    mins[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * fits[j].min)));
  }
  pack_scales_k4(scales, mins, b.scales);
  b.d = float_to_half(max_scale / 63.f);
  b.dmin = float_to_half(max_min / 63.f);
  for (int j = 0; j < 8; ++j) {
    const float d = half_to_float(b.d) * static_cast<float>(scales[j]);
    if (d == 0.0f) continue;  // keeps the fit's quants, as ggml does
    const float dm = half_to_float(b.dmin) * static_cast<float>(mins[j]);
    for (int l = 0; l < 32; ++l)
      L[32 * j + l] = static_cast<uint8_t>(std::clamp(nearest_int((x[32 * j + l] + dm) / d), 0, nmax));
  }
}

}  // namespace

void encode_q4_K(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    BlockQ4_K b{};
    uint8_t L[256];
    encode_scale_min_block(x, 15, -1.0f, 20, b, L);
    // Each 64 elements: the first 32 in the low nibbles, the next 32 in the high nibbles.
    for (int j = 0; j < 256; j += 64)
      for (int l = 0; l < 32; ++l) b.qs[j / 2 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    store_block(dst, i, b);
  }
}

void encode_q5_K(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    BlockQ5_K b{};
    uint8_t L[256];
    encode_scale_min_block(x, 31, -0.5f, 15, b, L);
    // As Q4_K's nibbles; the fifth bits of 64 elements take two bits of each qh byte.
    uint8_t bit_low = 1, bit_high = 2;
    for (int j = 0; j < 256; j += 64, bit_low <<= 2, bit_high <<= 2) {
      for (int l = 0; l < 32; ++l) {
        int low = L[j + l], high = L[j + l + 32];
        if (low > 15) {
          low -= 16;
          b.qh[l] |= bit_low;
        }
        if (high > 15) {
          high -= 16;
          b.qh[l] |= bit_high;
        }
        b.qs[j / 2 + l] = static_cast<uint8_t>(low | (high << 4));
      }
    }
    store_block(dst, i, b);
  }
}

void encode_q6_K(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    BlockQ6_K b{};
    int8_t L[256];
    float scales[16];
    float max_scale = 0, max_abs_scale = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_scale_symmetric(x + 16 * j, 16, 32, L + 16 * j);
      if (std::fabs(scales[j]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {  // an all-zero block is all zero bytes
      store_block(dst, i, b);
      continue;
    }
    const float iscale = -128.f / max_scale;
    b.d = float_to_half(1 / iscale);
    for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[j])));
    for (int j = 0; j < 16; ++j) {
      const float d = half_to_float(b.d) * static_cast<float>(b.scales[j]);
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; ++l)
        L[16 * j + l] = static_cast<int8_t>(std::clamp(nearest_int(x[16 * j + l] / d), -32, 31) + 32);
    }
    // Each 128 elements: low nibbles of runs 0 and 2 share ql[0..32), runs 1 and 3 ql[32..64); qh the top bits.
    for (int j = 0; j < 256; j += 128) {
      uint8_t* ql = b.ql + j / 2;
      uint8_t* qh = b.qh + j / 4;
      for (int l = 0; l < 32; ++l) {
        const int q0 = L[j + l], q1 = L[j + l + 32], q2 = L[j + l + 64], q3 = L[j + l + 96];  // 0..63
        ql[l] = static_cast<uint8_t>((q0 & 0x0f) | ((q2 & 0x0f) << 4));
        ql[l + 32] = static_cast<uint8_t>((q1 & 0x0f) | ((q3 & 0x0f) << 4));
        qh[l] = static_cast<uint8_t>((q0 >> 4) | ((q1 >> 4) << 2) | ((q2 >> 4) << 4) | ((q3 >> 4) << 6));
      }
    }
    store_block(dst, i, b);
  }
}

void encode_q8_K(const float* x, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    BlockQ8_K b{};
    float max = 0, amax = 0;
    for (int j = 0; j < 256; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    if (amax != 0.0f) {
      const float iscale = -127.f / max;  // ggml: -127, not -128, so that -max maps inside int8
      for (int j = 0; j < 256; ++j) b.qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
      for (int j = 0; j < 16; ++j) {
        int sum = 0;
        for (int l = 0; l < 16; ++l) sum += b.qs[16 * j + l];
        b.bsums[j] = static_cast<int16_t>(sum);
      }
      b.d = 1 / iscale;
    }
    store_block(dst, i, b);
  }
}

}  // namespace detail
}  // namespace parley::quant
