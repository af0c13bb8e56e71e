#include "kernels/cuda/kv_write.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.hpp"

namespace parley::cuda {

void CudaBackend::kv_write(const cpu::KvLayerView& kv, const float* k, const float* v, const int64_t* slots, int M) const {
  float *keys = kv.keys, *values = kv.values;
  const int kv_dim = kv.kv_dim;
  launch_1d("kv_write", int64_t(M) * kv_dim, stream_,
            [=] __device__(int64_t i) { body::kv_write_at(keys, values, kv_dim, k, v, slots, i); });
}

}  // namespace parley::cuda
