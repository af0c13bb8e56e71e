#include "kernels/cuda/embedding.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.hpp"

namespace parley::cuda {

void CudaBackend::embedding(const float* table, const int* tokens, int M, int dim, float* out) const {
  launch_1d("embedding", int64_t(M) * dim, stream_,
            [=] __device__(int64_t i) { body::embedding_at(table, tokens, dim, out, i); });
}

}  // namespace parley::cuda
