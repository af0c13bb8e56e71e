#include "kernels/cuda/glu.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.hpp"

namespace parley::cuda {

void CudaBackend::swiglu(const float* gate, const float* up, float* out, int64_t count) const {
  launch_1d("swiglu", count, stream_, [=] __device__(int64_t i) { body::swiglu_at(gate, up, out, i); });
}

void CudaBackend::geglu(const float* gate, const float* up, float* out, int64_t count) const {
  launch_1d("geglu", count, stream_, [=] __device__(int64_t i) { body::geglu_at(gate, up, out, i); });
}

}  // namespace parley::cuda
