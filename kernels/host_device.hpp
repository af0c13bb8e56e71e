// PARLEY_HD marks a function that runs on the host and in CUDA kernels: the per-thread bodies of the CUDA
// ops (kernels/cuda/*.hpp) and the Philox generator, so g++ builds and tests them where nvcc is absent.
#pragma once

#ifdef __CUDACC__
#define PARLEY_HD __host__ __device__
#else
#define PARLEY_HD
#endif

#ifdef __CUDACC__  // a loop with a compile-time trip count, unrolled, keeps its array in registers
#define PARLEY_UNROLL _Pragma("unroll")
#else
#define PARLEY_UNROLL
#endif
