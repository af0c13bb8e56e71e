#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.hpp"
#include "kernels/cuda/paged_attention.hpp"

namespace parley::cuda {

void CudaBackend::paged_attention(const float* q, const cpu::KvLayerView& kv, const cpu::AttentionMetadata& meta, int n_heads,
                                  int n_kv_heads, int head_dim, float* out) const {
  if (head_dim > body::kMaxHeadDim)
    throw std::invalid_argument("CUDA paged attention supports head_dim up to " + std::to_string(body::kMaxHeadDim));
  const body::PagedKv pkv{kv.keys, kv.values, kv.block_size, kv.kv_dim};
  const body::AttentionRows rows{meta.positions, meta.token_seq, meta.block_tables, meta.max_blocks_per_seq};
  // Few threads per block: each keeps a head_dim accumulator, and decode batches have few (token, head) rows.
  launch_1d("paged_attention", int64_t(meta.num_tokens) * n_heads, stream_, [=] __device__(int64_t i) {
    body::paged_attention_at(q, pkv, rows, n_heads, n_kv_heads, head_dim, out, i);
  }, 64);
}

}  // namespace parley::cuda
