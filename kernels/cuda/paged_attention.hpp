// CUDA paged attention over block tables, for prefill and decode alike, split over positions (flash-decoding):
// one thread per (token, query head, split) runs an online softmax over its split's positions of its own
// sequence, then one thread per (token, head, dimension) combines the splits. Splits have a fixed length,
// so a row's result depends only on its own position and KV, never on the other rows or on how the pass is
// chunked (batch invariance), and any mix of prefill chunks and decodes runs in the same two launches.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "kernels/cpu/ops.hpp"
#include "kernels/cuda/pointwise.hpp"
#include "kernels/host_device.hpp"
#include "kernels/kv_dtype.hpp"

namespace parley::cuda::body {

constexpr int kMaxHeadDim = 256;           // the largest head the split kernel holds (its accumulator)
constexpr int kSplitPositions = 64;        // positions per split
constexpr int64_t kScratchRows = 1 << 17;  // (token, head, split) partials a pass keeps at once, at most

// One layer's KV as attention reads it: elements of D (kernels/kv_dtype.hpp), widened to F32 as they are read.
template <KvDtype D>
struct PagedKv {
  const typename KvElem<D>::T* keys;  // [num_blocks * block_size][kv_dim]
  const typename KvElem<D>::T* values;
  int block_size, kv_dim;
};

struct AttentionRows {
  const int* positions;     // [num_tokens]
  const int* token_seq;     // [num_tokens]
  const int* block_tables;  // [num_seqs][max_blocks_per_seq]
  int max_blocks_per_seq;
};

// One chunk's partial softmaxes: per (token of the chunk, head, split) the running maximum, the sum of
// exponentials against it and the unnormalized output.
struct AttentionPartials {
  float* acc;  // [rows][head_dim]
  float* max;  // [rows]
  float* sum;  // [rows]
  int split;   // positions per split
  int splits;  // splits per (token, head) in this pass: enough for its longest sequence
};

// How a pass runs: `splits` per (token, head), and chunks of `tokens_per_chunk` tokens so the partials fit
// in scratch_rows (each chunk is two launches over the same scratch).
struct AttentionPlan {
  int splits = 0, tokens_per_chunk = 0;
};

inline AttentionPlan plan_attention(int max_positions, int n_heads, int split, int64_t scratch_rows) {
  AttentionPlan p;
  p.splits = (max_positions + split - 1) / split;
  p.tokens_per_chunk = int(std::min<int64_t>(scratch_rows / (int64_t(n_heads) * p.splits), 1 << 30));
  if (p.tokens_per_chunk < 1) throw std::logic_error("paged attention: the scratch holds no token's partials");
  return p;
}

// The scratch rows a pass of up to max_tokens tokens over up to max_positions positions wants (capped at
// kScratchRows, but always one token's worth).
inline int64_t attention_scratch_rows(int max_tokens, int n_heads, int max_positions, int split) {
  const int64_t one_token = int64_t(n_heads) * ((max_positions + split - 1) / split);
  return std::max(one_token, std::min(one_token * max_tokens, kScratchRows));
}

// i indexes [tokens of the chunk][n_heads][splits]; token `first` + i / (n_heads * splits) of the pass.
// q is [num_tokens][n_heads * head_dim]. A split outside the keys the token sees (past its position, or
// before its window) writes nothing; spec scores and windows as the CPU backend does. MaxD >= head_dim
// bounds the accumulator at compile time, so the unrolled loops keep it in registers (launch with the
// smallest of 64, 128, 256 that holds the head); the arithmetic is the same whatever MaxD.
template <int MaxD, KvDtype D>
PARLEY_HD inline void attention_split_at(const float* q, PagedKv<D> kv, AttentionRows rows, int n_heads, int n_kv_heads,
                                         int head_dim, AttentionPartials parts, int64_t first, int64_t i,
                                         cpu::AttentionSpec spec) {
  const int split = int(i % parts.splits);
  const int64_t row = i / parts.splits;  // (token, head) within the chunk
  const int64_t token = first + row / n_heads;
  const int head = int(row % n_heads);
  const int pos = rows.positions[token];
  const int first_key = spec.first_key(pos);
  int begin = split * parts.split;
  if (begin > pos) return;
  const int end = pos < begin + parts.split - 1 ? pos : begin + parts.split - 1;
  if (end < first_key) return;
  if (begin < first_key) begin = first_key;
  const int* table = rows.block_tables + int64_t(rows.token_seq[token]) * rows.max_blocks_per_seq;
  const int kv_head = head / (n_heads / n_kv_heads);
  const float* qh = q + (token * n_heads + head) * head_dim;
  const float scale = spec.score_scale(head_dim);
  float acc[MaxD];
  PARLEY_UNROLL
  for (int d = 0; d < MaxD; ++d) acc[d] = 0.0f;
  float max_score = -INFINITY, sum = 0.0f;
  for (int j = begin; j <= end; ++j) {
    const int64_t slot = int64_t(table[j / kv.block_size]) * kv.block_size + j % kv.block_size;
    const auto* kj = kv.keys + slot * kv.kv_dim + int64_t(kv_head) * head_dim;
    const auto* vj = kv.values + slot * kv.kv_dim + int64_t(kv_head) * head_dim;
    float s = 0.0f;
    PARLEY_UNROLL
    for (int d = 0; d < MaxD; ++d)
      if (d < head_dim) s += qh[d] * KvElem<D>::load(kj, d);
    s *= scale;
    if (spec.softcap > 0.0f) s = softcap(s, spec.softcap);
    if (s > max_score) {  // rescale what was summed against the old maximum
      const float c = expf(max_score - s);
      sum *= c;
      PARLEY_UNROLL
      for (int d = 0; d < MaxD; ++d) acc[d] *= c;
      max_score = s;
    }
    const float p = expf(s - max_score);
    sum += p;
    PARLEY_UNROLL
    for (int d = 0; d < MaxD; ++d)
      if (d < head_dim) acc[d] += p * KvElem<D>::load(vj, d);
  }
  parts.max[i] = max_score;
  parts.sum[i] = sum;
  PARLEY_UNROLL
  for (int d = 0; d < MaxD; ++d)
    if (d < head_dim) parts.acc[i * head_dim + d] = acc[d];
}

// i indexes [tokens of the chunk][n_heads][head_dim]; out is the pass's [num_tokens][n_heads * head_dim].
// Only the splits that hold keys the token sees are read, in order.
PARLEY_HD inline void attention_combine_at(AttentionRows rows, int n_heads, int head_dim, AttentionPartials parts,
                                           int64_t first, float* out, int64_t i, cpu::AttentionSpec spec) {
  const int64_t row = i / head_dim;  // (token, head) within the chunk
  const int d = int(i % head_dim);
  const int64_t token = first + row / n_heads;
  const int pos = rows.positions[token];
  const int from = spec.first_key(pos) / parts.split, to = pos / parts.split + 1;
  const int64_t base = row * parts.splits;
  float m = -INFINITY;
  for (int s = from; s < to; ++s) m = parts.max[base + s] > m ? parts.max[base + s] : m;
  float total = 0.0f, o = 0.0f;
  for (int s = from; s < to; ++s) {
    const float c = expf(parts.max[base + s] - m);
    total += parts.sum[base + s] * c;
    o += parts.acc[(base + s) * head_dim + d] * c;
  }
  out[(first * n_heads + row) * head_dim + d] = o / total;
}

}  // namespace parley::cuda::body
