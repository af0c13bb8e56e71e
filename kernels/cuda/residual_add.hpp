// CUDA residual add: y += x, one thread per value.
#pragma once
#include <cstdint>

#include "kernels/host_device.hpp"

namespace parley::cuda::body {

PARLEY_HD inline void add_at(float* y, const float* x, int64_t i) { y[i] += x[i]; }

}  // namespace parley::cuda::body
