#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.hpp"
#include "kernels/cuda/sampling.hpp"

namespace parley::cuda {

void CudaBackend::sample(const float* logits, int vocab, const body::SampleParams* params, int rows,
                         int* tokens) const {
  launch_1d(
      "sample", rows, stream_,
      [=] __device__(int64_t r) { tokens[r] = body::sample_row(logits + r * vocab, vocab, params[r]); }, 32);
}

}  // namespace parley::cuda
