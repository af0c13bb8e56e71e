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

namespace detail {

// The split and combine launches over KV of dtype D (one instantiation per dtype).
template <KvDtype D>
void attention_as(const float* q, const cpu::KvLayerView& kv, const cpu::AttentionMetadata& meta, int n_heads,
                  int n_kv_heads, int head_dim, float* out, const cpu::AttentionSpec& at,
                  const body::AttentionPartials& scratch, int64_t scratch_rows, cudaStream_t stream_) {
  using T = typename KvElem<D>::T;
  const body::PagedKv<D> pkv{kv.keys_as<const T>(), kv.values_as<const T>(), kv.block_size, kv.kv_dim};
  const body::AttentionRows rows{meta.positions, meta.token_seq, meta.block_tables, meta.max_blocks_per_seq};
  const body::AttentionPlan plan =
      body::plan_attention(meta.max_blocks_per_seq * kv.block_size, n_heads, body::kSplitPositions, scratch_rows);
  body::AttentionPartials parts = scratch;
  parts.splits = plan.splits;
  for (int64_t first = 0; first < meta.num_tokens; first += plan.tokens_per_chunk) {
    const int64_t tokens = std::min<int64_t>(plan.tokens_per_chunk, meta.num_tokens - first);
    // Few threads per block: each keeps a head_dim accumulator. One kernel per accumulator bound, so a small
    // head keeps its accumulator in registers.
    const int64_t n = tokens * n_heads * plan.splits;
    if (head_dim <= 64)
      launch_1d(
          "attention_split", n, stream_,
          [=] __device__(int64_t i) {
            body::attention_split_at<64, D>(q, pkv, rows, n_heads, n_kv_heads, head_dim, parts, first, i, at);
          },
          64);
    else if (head_dim <= 128)
      launch_1d(
          "attention_split", n, stream_,
          [=] __device__(int64_t i) {
            body::attention_split_at<128, D>(q, pkv, rows, n_heads, n_kv_heads, head_dim, parts, first, i, at);
          },
          64);
    else
      launch_1d(
          "attention_split", n, stream_,
          [=] __device__(int64_t i) {
            body::attention_split_at<body::kMaxHeadDim, D>(q, pkv, rows, n_heads, n_kv_heads, head_dim, parts, first, i,
                                                           at);
          },
          64);
    launch_1d("attention_combine", tokens * n_heads * head_dim, stream_, [=] __device__(int64_t i) {
      body::attention_combine_at(rows, n_heads, head_dim, parts, first, out, i, at);
    });
  }
}

}  // namespace detail

void CudaBackend::paged_attention(const float* q, const cpu::KvLayerView& kv, const cpu::AttentionMetadata& meta,
                                  int n_heads, int n_kv_heads, int head_dim, float* out,
                                  const cpu::AttentionSpec& spec) const {
  if (head_dim > attn_head_dim_)
    throw std::logic_error("CudaBackend::paged_attention: reserve_attention was sized for a smaller head");
  const body::AttentionPartials scratch{attn_acc_.get<float>(), attn_max_.get<float>(), attn_sum_.get<float>(),
                                        body::kSplitPositions, 0};
  switch (kv.dtype) {
    case KvDtype::F16:
      return detail::attention_as<KvDtype::F16>(q, kv, meta, n_heads, n_kv_heads, head_dim, out, spec, scratch,
                                                attn_rows_, stream_);
    case KvDtype::Bf16:
      return detail::attention_as<KvDtype::Bf16>(q, kv, meta, n_heads, n_kv_heads, head_dim, out, spec, scratch,
                                                 attn_rows_, stream_);
    default:
      return detail::attention_as<KvDtype::F32>(q, kv, meta, n_heads, n_kv_heads, head_dim, out, spec, scratch,
                                                attn_rows_, stream_);
  }
}

}  // namespace parley::cuda
