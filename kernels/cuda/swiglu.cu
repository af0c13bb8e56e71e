#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.hpp"
#include "kernels/cuda/swiglu.hpp"

namespace parley::cuda {

void CudaBackend::swiglu(const float* gate, const float* up, float* out, int64_t count) const {
  launch_1d("swiglu", count, stream_, [=] __device__(int64_t i) { body::swiglu_at(gate, up, out, i); });
}

}  // namespace parley::cuda
