#include "kernels/cuda/gather_rows.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.hpp"

namespace parley::cuda {

void CudaBackend::gather_rows(const float* src, const int* rows, int S, int width, float* dst) const {
  launch_1d("gather_rows", int64_t(S) * width, stream_,
            [=] __device__(int64_t i) { body::gather_rows_at(src, rows, width, dst, i); });
}

}  // namespace parley::cuda
