#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.hpp"
#include "kernels/cuda/paged_attention.hpp"

namespace parley::cuda {

void CudaBackend::reserve_attention(int max_tokens, int n_heads, int head_dim, int max_positions) {
  if (head_dim > body::kMaxHeadDim)
    throw std::invalid_argument("CUDA paged attention supports head_dim up to " + std::to_string(body::kMaxHeadDim));
  const int64_t rows = body::attention_scratch_rows(max_tokens, n_heads, max_positions, body::kSplitPositions);
  attn_acc_ = DeviceBuffer(size_t(rows) * head_dim * 4);
  attn_max_ = DeviceBuffer(size_t(rows) * 4);
  attn_sum_ = DeviceBuffer(size_t(rows) * 4);
  attn_rows_ = rows, attn_head_dim_ = head_dim;
}

void CudaBackend::paged_attention(const float* q, const cpu::KvLayerView& kv, const cpu::AttentionMetadata& meta, int n_heads,
                                  int n_kv_heads, int head_dim, float* out, const cpu::AttentionSpec& spec) const {
  if (head_dim > attn_head_dim_) throw std::logic_error("CudaBackend::paged_attention: reserve_attention was sized for a smaller head");
  const cpu::AttentionSpec at = spec;
  const body::PagedKv pkv{kv.keys, kv.values, kv.block_size, kv.kv_dim};
  const body::AttentionRows rows{meta.positions, meta.token_seq, meta.block_tables, meta.max_blocks_per_seq};
  const body::AttentionPlan plan =
      body::plan_attention(meta.max_blocks_per_seq * kv.block_size, n_heads, body::kSplitPositions, attn_rows_);
  const body::AttentionPartials parts{attn_acc_.get<float>(), attn_max_.get<float>(), attn_sum_.get<float>(),
                                      body::kSplitPositions, plan.splits};
  for (int64_t first = 0; first < meta.num_tokens; first += plan.tokens_per_chunk) {
    const int64_t tokens = std::min<int64_t>(plan.tokens_per_chunk, meta.num_tokens - first);
    // Few threads per block: each keeps a head_dim accumulator. One kernel per accumulator bound, so a small
    // head keeps its accumulator in registers.
    const int64_t n = tokens * n_heads * plan.splits;
    if (head_dim <= 64)
      launch_1d("attention_split", n, stream_, [=] __device__(int64_t i) {
        body::attention_split_at<64>(q, pkv, rows, n_heads, n_kv_heads, head_dim, parts, first, i, at);
      }, 64);
    else if (head_dim <= 128)
      launch_1d("attention_split", n, stream_, [=] __device__(int64_t i) {
        body::attention_split_at<128>(q, pkv, rows, n_heads, n_kv_heads, head_dim, parts, first, i, at);
      }, 64);
    else
      launch_1d("attention_split", n, stream_, [=] __device__(int64_t i) {
        body::attention_split_at<body::kMaxHeadDim>(q, pkv, rows, n_heads, n_kv_heads, head_dim, parts, first, i, at);
      }, 64);
    launch_1d("attention_combine", tokens * n_heads * head_dim, stream_, [=] __device__(int64_t i) {
      body::attention_combine_at(rows, n_heads, head_dim, parts, first, out, i, at);
    });
  }
}

}  // namespace parley::cuda
