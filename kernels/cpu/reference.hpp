// Plain scalar versions of every CPU op: the oracle the vectorized kernels are tested against.
#pragma once
#include <cstdint>

#include "kernels/cpu/ops.hpp"

namespace parley::cpu::reference {

void matmul(const float* x, const float* w, float* out, int M, int N, int K);
void rmsnorm(const float* x, const float* weight, float* out, int M, int dim, float eps);
void layernorm(const float* x, const float* weight, const float* bias, float* out, int M, int dim, float eps);
void rope(float* x, const int* positions, int M, int n_heads, int head_dim, const RopeSpec& spec);
inline void rope(float* x, const int* positions, int M, int n_heads, int head_dim, float theta, RopeLayout layout) {
  rope(x, positions, M, n_heads, head_dim, RopeSpec{theta, layout});
}
void swiglu(const float* gate, const float* up, float* out, int64_t count);
void geglu(const float* gate, const float* up, float* out, int64_t count);
float gelu_tanh(float x);
float softcap(float score, float cap);  // cap * tanh(score / cap), or score when cap is 0
void embedding(const float* table, const int* tokens, int M, int dim, float* out);
void kv_write(const KvLayerView& kv, const float* k, const float* v, const int64_t* slots, int M);
// One (token, head) of paged attention; scores is scratch of at least meta.last_key(token) + 1 floats.
void attention_head(const float* q, const KvLayerView& kv, const AttentionMetadata& meta, int token, int head,
                    int n_heads, int n_kv_heads, int head_dim, float* scores, float* out,
                    const AttentionSpec& spec = {});
void paged_attention(const float* q, const KvLayerView& kv, const AttentionMetadata& meta, int n_heads, int n_kv_heads,
                     int head_dim, float* out, const AttentionSpec& spec = {});

}  // namespace parley::cpu::reference
