// CUDA row gather: dst[s] = src[rows[s]], one thread per value (the embedding lookup; the rows the head or
// the sampler needs).
#pragma once
#include <cstdint>

#include "kernels/host_device.hpp"

namespace parley::cuda::body {

PARLEY_HD inline void gather_rows_at(const float* src, const int* rows, int width, float* dst, int64_t i) {
  const int64_t s = i / width, d = i % width;
  dst[i] = src[int64_t(rows[s]) * width + d];
}

}  // namespace parley::cuda::body
