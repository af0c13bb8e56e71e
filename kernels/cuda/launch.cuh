// The launcher: one thread per index of [0, n), each running a kernel body (kernels/cuda/*.hpp), with the
// launch checked at once. Only .cu files include this.
#pragma once
#include <cstdint>

#include "kernels/cuda/check.hpp"

namespace parley::cuda {

template <class F>
__global__ void for_each_index(int64_t n, F f) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) f(i);
}

template <class F>
void launch_1d(const char* name, int64_t n, cudaStream_t stream, F f, int threads = 128) {
  if (n <= 0) return;
  const int64_t blocks = (n + threads - 1) / threads;
  for_each_index<<<unsigned(blocks), threads, 0, stream>>>(n, f);
  check_launch(name, __FILE__, __LINE__);
}

}  // namespace parley::cuda
