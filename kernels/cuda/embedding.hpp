// CUDA embedding: out[m] = table[tokens[m]], one thread per output value.
#pragma once
#include <cstdint>

#include "kernels/host_device.hpp"

namespace parley::cuda::body {

PARLEY_HD inline void embedding_at(const float* table, const int* tokens, int dim, float* out, int64_t i) {
  const int64_t m = i / dim, d = i % dim;
  out[i] = table[int64_t(tokens[m]) * dim + d];
}

}  // namespace parley::cuda::body
