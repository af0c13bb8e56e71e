#include "kernels/cpu/reference.hpp"

#include <cmath>
#include <cstring>
#include <vector>

namespace parley::cpu::reference {

void matmul(const float* x, const float* w, float* out, int M, int N, int K) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k) acc += x[int64_t(m) * K + k] * w[int64_t(n) * K + k];
      out[int64_t(m) * N + n] = acc;
    }
}

// Same arithmetic as llama2.c run.c's rmsnorm, so the reference model reproduces it.
void rmsnorm(const float* x, const float* weight, float* out, int M, int dim, float eps) {
  for (int m = 0; m < M; ++m) {
    const float* row = x + int64_t(m) * dim;
    float ss = 0.0f;
    for (int j = 0; j < dim; ++j) ss += row[j] * row[j];
    ss /= dim;
    ss += eps;
    ss = 1.0f / std::sqrt(ss);
    for (int j = 0; j < dim; ++j) out[int64_t(m) * dim + j] = weight[j] * (ss * row[j]);
  }
}

// Frequencies as run.c computes them (powf/cosf/sinf in float).
void rope(float* x, const int* positions, int M, int n_heads, int head_dim, float theta, RopeLayout layout) {
  const int half = head_dim / 2;
  for (int m = 0; m < M; ++m) {
    const float pos = static_cast<float>(positions[m]);
    for (int h = 0; h < n_heads; ++h) {
      float* head = x + (int64_t(m) * n_heads + h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const float freq = 1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(head_dim));
        const float val = pos * freq;
        const float c = std::cos(val), s = std::sin(val);
        const int a = layout == RopeLayout::Adjacent ? 2 * i : i;
        const int b = layout == RopeLayout::Adjacent ? 2 * i + 1 : i + half;
        const float v0 = head[a], v1 = head[b];
        head[a] = v0 * c - v1 * s;
        head[b] = v0 * s + v1 * c;
      }
    }
  }
}

void swiglu(const float* gate, const float* up, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    float g = gate[i];
    g *= 1.0f / (1.0f + std::exp(-g));
    out[i] = g * up[i];
  }
}

void embedding(const float* table, const int* tokens, int M, int dim, float* out) {
  for (int m = 0; m < M; ++m)
    std::memcpy(out + int64_t(m) * dim, table + int64_t(tokens[m]) * dim, sizeof(float) * dim);
}

void kv_write(const KvLayerView& kv, const float* k, const float* v, const int64_t* slots, int M) {
  for (int m = 0; m < M; ++m) {
    std::memcpy(kv.keys + slots[m] * kv.kv_dim, k + int64_t(m) * kv.kv_dim, sizeof(float) * kv.kv_dim);
    std::memcpy(kv.values + slots[m] * kv.kv_dim, v + int64_t(m) * kv.kv_dim, sizeof(float) * kv.kv_dim);
  }
}

void attention_head(const float* q, const KvLayerView& kv, const AttentionMetadata& meta, int token,
                    int head, int n_heads, int n_kv_heads, int head_dim, float* scores, float* out) {
  const int pos = meta.positions[token];
  const int* table = meta.block_tables + int64_t(meta.token_seq[token]) * meta.max_blocks_per_seq;
  const int kv_head = head / (n_heads / n_kv_heads);
  const float* qh = q + (int64_t(token) * n_heads + head) * head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  float max_score = -INFINITY;
  for (int j = 0; j <= pos; ++j) {
    const int64_t slot = int64_t(table[j / kv.block_size]) * kv.block_size + j % kv.block_size;
    const float* kj = kv.keys + slot * kv.kv_dim + kv_head * head_dim;
    float s = 0.0f;
    for (int d = 0; d < head_dim; ++d) s += qh[d] * kj[d];
    scores[j] = s * scale;
    if (scores[j] > max_score) max_score = scores[j];
  }
  float sum = 0.0f;
  for (int j = 0; j <= pos; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    sum += scores[j];
  }
  float* oh = out + (int64_t(token) * n_heads + head) * head_dim;
  for (int d = 0; d < head_dim; ++d) oh[d] = 0.0f;
  for (int j = 0; j <= pos; ++j) {
    const int64_t slot = int64_t(table[j / kv.block_size]) * kv.block_size + j % kv.block_size;
    const float* vj = kv.values + slot * kv.kv_dim + kv_head * head_dim;
    const float p = scores[j] / sum;
    for (int d = 0; d < head_dim; ++d) oh[d] += p * vj[d];
  }
}

void paged_attention(const float* q, const KvLayerView& kv, const AttentionMetadata& meta, int n_heads,
                     int n_kv_heads, int head_dim, float* out) {
  std::vector<float> scores;
  for (int t = 0; t < meta.num_tokens; ++t) {
    scores.resize(meta.positions[t] + 1);
    for (int h = 0; h < n_heads; ++h)
      attention_head(q, kv, meta, t, h, n_heads, n_kv_heads, head_dim, scores.data(), out);
  }
}

}  // namespace parley::cpu::reference
