// CUDA gated linear units, one thread per value: SwiGLU (silu(gate) * up) and GeGLU (gelu_tanh(gate) * up),
// in the CPU reference's float arithmetic.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/host_device.hpp"

namespace parley::cuda::body {

PARLEY_HD inline void swiglu_at(const float* gate, const float* up, float* out, int64_t i) {
  float g = gate[i];
  g *= 1.0f / (1.0f + expf(-g));
  out[i] = g * up[i];
}

// GELU with the tanh approximation (Gemma's hidden_act).
PARLEY_HD inline float gelu_tanh(float x) {
  const float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

PARLEY_HD inline void geglu_at(const float* gate, const float* up, float* out, int64_t i) {
  out[i] = gelu_tanh(gate[i]) * up[i];
}

}  // namespace parley::cuda::body
