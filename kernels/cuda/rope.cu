#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.hpp"
#include "kernels/cuda/rope.hpp"

namespace parley::cuda {

void CudaBackend::rope(float* x, const int* positions, int M, int n_heads, int head_dim,
                       const cpu::RopeSpec& spec) const {
  const cpu::RopeSpec s = spec;
  launch_1d("rope", int64_t(M) * n_heads * (body::rotary_dims(s, head_dim) / 2), stream_,
            [=] __device__(int64_t i) { body::rope_at(x, positions, n_heads, head_dim, s, i); });
}

}  // namespace parley::cuda
