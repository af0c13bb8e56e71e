#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.hpp"
#include "kernels/cuda/pointwise.hpp"

namespace parley::cuda {

void CudaBackend::add_bias(float* y, const float* bias, int rows, int width) const {
  launch_1d("add_bias", int64_t(rows) * width, stream_,
            [=] __device__(int64_t i) { body::add_bias_at(y, bias, width, i); });
}

void CudaBackend::scale(float* x, float s, int64_t count) const {
  launch_1d("scale", count, stream_, [=] __device__(int64_t i) { body::scale_at(x, s, i); });
}

void CudaBackend::softcap(float* x, float cap, int64_t count) const {
  launch_1d("softcap", count, stream_, [=] __device__(int64_t i) { body::softcap_at(x, cap, i); });
}

}  // namespace parley::cuda
