#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.hpp"
#include "kernels/cuda/spec_verify.hpp"

namespace parley::cuda {

void CudaBackend::verify_exact(const int* sampled, const int* drafts, int k, int rows, int* accepted) const {
  launch_1d("verify_exact", rows, stream_, [=] __device__(int64_t r) {
    accepted[r] = body::verify_exact_row(sampled + r * (k + 1), drafts + r * k, k);
  });
}

}  // namespace parley::cuda
