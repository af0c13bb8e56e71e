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

// Mean and variance summed in double, as ggml_norm's row sums (ggml_float), then scaled and shifted in float.
void layernorm(const float* x, const float* weight, const float* bias, float* out, int M, int dim, float eps) {
  for (int m = 0; m < M; ++m) {
    const float* row = x + int64_t(m) * dim;
    float* y = out + int64_t(m) * dim;
    double sum = 0.0;
    for (int j = 0; j < dim; ++j) sum += row[j];
    const float mean = float(sum / dim);
    double squares = 0.0;
    for (int j = 0; j < dim; ++j) {
      const float d = row[j] - mean;
      squares += double(d * d);
    }
    const float scale = 1.0f / std::sqrt(float(squares / dim) + eps);
    for (int j = 0; j < dim; ++j) y[j] = (row[j] - mean) * scale * weight[j] + bias[j];
  }
}

// Frequencies as run.c computes them (powf/cosf/sinf in float), over rot_dims instead of the head.
void rope(float* x, const int* positions, int M, int n_heads, int head_dim, const RopeSpec& spec) {
  const int rot = spec.rot_dims > 0 ? spec.rot_dims : head_dim, half = rot / 2;
  thread_local std::vector<float> cos_sin;  // one token's rotation, the same for every head
  cos_sin.resize(2 * size_t(half));
  for (int m = 0; m < M; ++m) {
    for (int i = 0; i < half; ++i) rope_cos_sin(spec, positions[m], i, rot, &cos_sin[2 * i], &cos_sin[2 * i + 1]);
    for (int h = 0; h < n_heads; ++h) {
      float* head = x + (int64_t(m) * n_heads + h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
        const int a = spec.layout == RopeLayout::Adjacent ? 2 * i : i;
        const int b = spec.layout == RopeLayout::Adjacent ? 2 * i + 1 : i + half;
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

// GELU with the tanh approximation (PyTorch's approximate="tanh", Gemma's hidden_act).
float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

void geglu(const float* gate, const float* up, float* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = gelu_tanh(gate[i]) * up[i];
}

float softcap(float score, float cap) { return cap > 0.0f ? cap * std::tanh(score / cap) : score; }

void embedding(const float* table, const int* tokens, int M, int dim, float* out) {
  for (int m = 0; m < M; ++m)
    std::memcpy(out + int64_t(m) * dim, table + int64_t(tokens[m]) * dim, sizeof(float) * dim);
}

namespace {

template <KvDtype D>
void kv_write_as(const KvLayerView& kv, const float* k, const float* v, const int64_t* slots, int M) {
  using E = KvElem<D>;
  if constexpr (D == KvDtype::F32) {  // a row copy each: the element loop below does not vectorize
    const size_t row = sizeof(float) * size_t(kv.kv_dim);
    for (int m = 0; m < M; ++m) {
      std::memcpy(kv.keys_as<float>() + slots[m] * kv.kv_dim, k + int64_t(m) * kv.kv_dim, row);
      std::memcpy(kv.values_as<float>() + slots[m] * kv.kv_dim, v + int64_t(m) * kv.kv_dim, row);
    }
    return;
  }
  for (int m = 0; m < M; ++m)
    for (int d = 0; d < kv.kv_dim; ++d) {
      E::store(kv.keys_as<typename E::T>(), slots[m] * kv.kv_dim + d, k[int64_t(m) * kv.kv_dim + d]);
      E::store(kv.values_as<typename E::T>(), slots[m] * kv.kv_dim + d, v[int64_t(m) * kv.kv_dim + d]);
    }
}

// Element i of a layer's keys or values, widened to F32.
float kv_load(const void* base, KvDtype dtype, int64_t i) {
  switch (dtype) {
    case KvDtype::F16:
      return KvElem<KvDtype::F16>::load(static_cast<const uint16_t*>(base), i);
    case KvDtype::Bf16:
      return KvElem<KvDtype::Bf16>::load(static_cast<const uint16_t*>(base), i);
    default:
      return static_cast<const float*>(base)[i];
  }
}

}  // namespace

void kv_write(const KvLayerView& kv, const float* k, const float* v, const int64_t* slots, int M) {
  switch (kv.dtype) {
    case KvDtype::F16:
      return kv_write_as<KvDtype::F16>(kv, k, v, slots, M);
    case KvDtype::Bf16:
      return kv_write_as<KvDtype::Bf16>(kv, k, v, slots, M);
    default:
      return kv_write_as<KvDtype::F32>(kv, k, v, slots, M);
  }
}

void attention_head(const float* q, const KvLayerView& kv, const AttentionMetadata& meta, int token, int head,
                    int n_heads, int n_kv_heads, int head_dim, float* scores, float* out, const AttentionSpec& spec) {
  const int last = meta.last_key(token);
  const int* table = meta.block_tables + int64_t(meta.token_seq[token]) * meta.max_blocks_per_seq;
  const int kv_head = head / (n_heads / n_kv_heads);
  const float* qh = q + (int64_t(token) * n_heads + head) * head_dim;
  const float scale = spec.score_scale(head_dim);
  const int first = spec.first_key(meta.positions[token]);
  const float sink = spec.sinks ? spec.sinks[head] : -INFINITY;
  float max_score = sink;
  for (int j = first; j <= last; ++j) {
    const int64_t slot = int64_t(table[j / kv.block_size]) * kv.block_size + j % kv.block_size;
    const int64_t kj = slot * kv.kv_dim + kv_head * head_dim;
    float s = 0.0f;
    for (int d = 0; d < head_dim; ++d) s += qh[d] * kv_load(kv.keys, kv.dtype, kj + d);
    scores[j] = softcap(s * scale, spec.softcap);
    if (scores[j] > max_score) max_score = scores[j];
  }
  float sum = 0.0f;
  for (int j = first; j <= last; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    sum += scores[j];
  }
  if (spec.sinks) sum += std::exp(sink - max_score);  // a sink takes its share and has no value
  float* oh = out + (int64_t(token) * n_heads + head) * head_dim;
  for (int d = 0; d < head_dim; ++d) oh[d] = 0.0f;
  for (int j = first; j <= last; ++j) {
    const int64_t slot = int64_t(table[j / kv.block_size]) * kv.block_size + j % kv.block_size;
    const int64_t vj = slot * kv.kv_dim + kv_head * head_dim;
    const float p = scores[j] / sum;
    for (int d = 0; d < head_dim; ++d) oh[d] += p * kv_load(kv.values, kv.dtype, vj + d);
  }
}

void paged_attention(const float* q, const KvLayerView& kv, const AttentionMetadata& meta, int n_heads, int n_kv_heads,
                     int head_dim, float* out, const AttentionSpec& spec) {
  std::vector<float> scores;
  for (int t = 0; t < meta.num_tokens; ++t) {
    scores.resize(size_t(meta.last_key(t)) + 1);
    for (int h = 0; h < n_heads; ++h)
      attention_head(q, kv, meta, t, h, n_heads, n_kv_heads, head_dim, scores.data(), out, spec);
  }
}

}  // namespace parley::cpu::reference
