#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.hpp"
#include "kernels/cuda/rmsnorm.hpp"

namespace parley::cuda {

void CudaBackend::rmsnorm(const float* x, const float* weight, float* out, int M, int dim, float eps) const {
  launch_1d("rmsnorm", M, stream_,
            [=] __device__(int64_t m) { body::rmsnorm_row(x + m * dim, weight, out + m * dim, dim, eps); });
}

}  // namespace parley::cuda
