// CUDA RMSNorm: one thread per row, summing in index order as the CPU reference (and llama2.c) does, so a
// row's result never depends on the other rows.
#pragma once
#include <cmath>

#include "kernels/host_device.hpp"

namespace parley::cuda::body {

PARLEY_HD inline void rmsnorm_row(const float* x, const float* weight, float* out, int dim, float eps) {
  float ss = 0.0f;
  for (int j = 0; j < dim; ++j) ss += x[j] * x[j];
  ss /= float(dim);
  ss += eps;
  ss = 1.0f / sqrtf(ss);
  for (int j = 0; j < dim; ++j) out[j] = weight[j] * (ss * x[j]);
}

}  // namespace parley::cuda::body
