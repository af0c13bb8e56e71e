#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/moe.hpp"
#include "kernels/cuda/ops.hpp"

namespace parley::cuda {

void CudaBackend::route(float* logits, int M, const moe::Routing& r, int* experts, float* weights) const {
  launch_1d("moe_route", M, stream_, [=] __device__(int64_t t) { body::route_at(logits, r, experts, weights, t); });
}

void CudaBackend::expert_matmul(const float* x, bool per_slot, const DeviceMatrix& w, int n, const int* experts, int M,
                                int k, float* out) const {
  const int K = w.K;
  const int64_t count = int64_t(M) * k * n;
  switch (w.dtype) {
    case DType::F32: {
      const float* p = w.data.get<float>();
      launch_1d("expert_matmul", count, stream_, [=] __device__(int64_t i) {
        body::expert_dot_at(
            x, per_slot, [p](int64_t j) { return p[j]; }, n, K, experts, k, out, i);
      });
      break;
    }
    case DType::BF16: {
      const __nv_bfloat16* p = w.data.get<__nv_bfloat16>();
      launch_1d("expert_matmul", count, stream_, [=] __device__(int64_t i) {
        body::expert_dot_at(
            x, per_slot, [p](int64_t j) { return __bfloat162float(p[j]); }, n, K, experts, k, out, i);
      });
      break;
    }
    case DType::F16: {
      const __half* p = w.data.get<__half>();
      launch_1d("expert_matmul", count, stream_, [=] __device__(int64_t i) {
        body::expert_dot_at(
            x, per_slot, [p](int64_t j) { return __half2float(p[j]); }, n, K, experts, k, out, i);
      });
      break;
    }
  }
}

void CudaBackend::moe_sum(const float* y, const float* weights, int M, int k, int dim, float* out) const {
  launch_1d("moe_sum", int64_t(M) * dim, stream_,
            [=] __device__(int64_t i) { body::moe_sum_at(y, weights, k, dim, out, i); });
}

void CudaBackend::gated_add(float* out, const float* y, const float* gate, int M, int dim) const {
  launch_1d("gated_add", int64_t(M) * dim, stream_,
            [=] __device__(int64_t i) { body::gated_add_at(out, y, gate, dim, i); });
}

}  // namespace parley::cuda
