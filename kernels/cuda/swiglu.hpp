// CUDA SwiGLU: out = silu(gate) * up, one thread per value.
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

}  // namespace parley::cuda::body
