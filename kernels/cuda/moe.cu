#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/moe.hpp"
#include "kernels/cuda/ops.hpp"

namespace parley::cuda {
namespace {

__device__ inline float widen(float v) { return v; }
__device__ inline float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float widen(__half v) { return __half2float(v); }

// One thread per (token, slot, output) of the experts' stacked weights p (F32, BF16 or F16).
template <class W>
void launch_expert_dots(cudaStream_t stream, const float* x, bool per_slot, const W* p, int K, int n,
                        const int* experts, int M, int k, float* out) {
  launch_1d("expert_matmul", int64_t(M) * k * n, stream, [=] __device__(int64_t i) {
    body::expert_dot_at(
        x, per_slot, [p](int64_t j) { return widen(p[j]); }, n, K, experts, k, out, i);
  });
}

}  // namespace

void CudaBackend::route(float* logits, int M, const moe::Routing& r, int* experts, float* weights) const {
  launch_1d("moe_route", M, stream_, [=] __device__(int64_t t) { body::route_at(logits, r, experts, weights, t); });
}

void CudaBackend::expert_matmul(const float* x, bool per_slot, const DeviceMatrix& w, int n, const int* experts, int M,
                                int k, float* out) const {
  switch (w.dtype) {
    case DType::F32:
      return launch_expert_dots(stream_, x, per_slot, w.data.get<float>(), w.K, n, experts, M, k, out);
    case DType::BF16:
      return launch_expert_dots(stream_, x, per_slot, w.data.get<__nv_bfloat16>(), w.K, n, experts, M, k, out);
    case DType::F16:
      return launch_expert_dots(stream_, x, per_slot, w.data.get<__half>(), w.K, n, experts, M, k, out);
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
