#include "kernels/cuda/kv_write.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.hpp"

namespace parley::cuda {

namespace detail {

template <KvDtype D>
void launch_kv_write(const cpu::KvLayerView& kv, const float* k, const float* v, const int64_t* slots, int M,
                     cudaStream_t stream) {
  void *keys = kv.keys, *values = kv.values;
  const int kv_dim = kv.kv_dim;
  launch_1d("kv_write", int64_t(M) * kv_dim, stream,
            [=] __device__(int64_t i) { body::kv_write_at<D>(keys, values, kv_dim, k, v, slots, i); });
}

}  // namespace detail

void CudaBackend::kv_write(const cpu::KvLayerView& kv, const float* k, const float* v, const int64_t* slots,
                           int M) const {
  switch (kv.dtype) {
    case KvDtype::F16:
      return detail::launch_kv_write<KvDtype::F16>(kv, k, v, slots, M, stream_);
    case KvDtype::Bf16:
      return detail::launch_kv_write<KvDtype::Bf16>(kv, k, v, slots, M, stream_);
    default:
      return detail::launch_kv_write<KvDtype::F32>(kv, k, v, slots, M, stream_);
  }
}

}  // namespace parley::cuda
