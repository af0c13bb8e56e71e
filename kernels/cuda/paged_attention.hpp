// CUDA paged attention over block tables, for prefill and decode alike: one thread per (token, query head)
// walks positions [0, position] of its own sequence with an online softmax, so a row never depends on the
// other rows (batch invariance) and any mix of prefill chunks and decodes runs in one launch.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/host_device.hpp"

namespace parley::cuda::body {

constexpr int kMaxHeadDim = 256;  // the accumulator lives in registers/local memory

struct PagedKv {
  const float* keys;    // [num_blocks * block_size][kv_dim]
  const float* values;
  int block_size, kv_dim;
};

struct AttentionRows {
  const int* positions;     // [num_tokens]
  const int* token_seq;     // [num_tokens]
  const int* block_tables;  // [num_seqs][max_blocks_per_seq]
  int max_blocks_per_seq;
};

// i indexes [num_tokens][n_heads]; q and out are [num_tokens][n_heads * head_dim].
PARLEY_HD inline void paged_attention_at(const float* q, PagedKv kv, AttentionRows rows, int n_heads, int n_kv_heads,
                                         int head_dim, float* out, int64_t i) {
  const int64_t token = i / n_heads;
  const int head = int(i % n_heads);
  const int pos = rows.positions[token];
  const int* table = rows.block_tables + int64_t(rows.token_seq[token]) * rows.max_blocks_per_seq;
  const int kv_head = head / (n_heads / n_kv_heads);
  const float* qh = q + i * head_dim;
  const float scale = 1.0f / sqrtf(float(head_dim));
  float acc[kMaxHeadDim];
  for (int d = 0; d < head_dim; ++d) acc[d] = 0.0f;
  float max_score = -INFINITY, sum = 0.0f;
  for (int j = 0; j <= pos; ++j) {
    const int64_t slot = int64_t(table[j / kv.block_size]) * kv.block_size + j % kv.block_size;
    const float* kj = kv.keys + slot * kv.kv_dim + int64_t(kv_head) * head_dim;
    const float* vj = kv.values + slot * kv.kv_dim + int64_t(kv_head) * head_dim;
    float s = 0.0f;
    for (int d = 0; d < head_dim; ++d) s += qh[d] * kj[d];
    s *= scale;
    if (s > max_score) {  // rescale what was summed against the old maximum
      const float c = expf(max_score - s);
      sum *= c;
      for (int d = 0; d < head_dim; ++d) acc[d] *= c;
      max_score = s;
    }
    const float p = expf(s - max_score);
    sum += p;
    for (int d = 0; d < head_dim; ++d) acc[d] += p * vj[d];
  }
  float* oh = out + i * head_dim;
  for (int d = 0; d < head_dim; ++d) oh[d] = acc[d] / sum;
}

}  // namespace parley::cuda::body
