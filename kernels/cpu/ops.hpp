// The CPU backend: the op set every backend implements (CUDA mirrors these signatures).
// All ops are batch-invariant: a row's result never depends on the other rows or the thread count.
#pragma once
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "kernels/cpu/isa.hpp"
#include "kernels/cpu/weight_buffer.hpp"
#include "kernels/host_device.hpp"
#include "kernels/kv_dtype.hpp"
#include "kernels/rope_layout.hpp"

namespace parley::cpu {

struct QuantMatrix;  // kernels/cpu/quant_matrix.hpp

// One layer's paged KV storage: [num_blocks][block_size][kv_dim] for keys and for values, elements of dtype.
struct KvLayerView {
  void* keys;
  void* values;
  int block_size;
  int kv_dim;
  KvDtype dtype = KvDtype::F32;
  template <class T>
  T* keys_as() const {
    return static_cast<T*>(keys);
  }
  template <class T>
  T* values_as() const {
    return static_cast<T*>(values);
  }
};

// Where each token of a flattened batch reads and writes the KV cache (vLLM's attention metadata).
struct AttentionMetadata {
  int num_tokens = 0;
  const int* positions = nullptr;     // [num_tokens] position of each token in its sequence
  const int* token_seq = nullptr;     // [num_tokens] index of the token's sequence
  const int* block_tables = nullptr;  // [num_seqs][max_blocks_per_seq] physical block ids
  int max_blocks_per_seq = 0;
  // [num_tokens] one past the last key each token sees, or null: causal (its own position). A bidirectional model
  // (an encoder) sees its whole sequence: each token's sequence length.
  const int* key_ends = nullptr;
  int last_key(int t) const { return key_ends ? key_ends[t] - 1 : positions[t]; }
};

// How one rope() call rotates: the frequencies theta^(-2i/rot_dims) / freq_factors[i], positions times
// freq_scale, cos and sin times attn_factor; dimensions past rot_dims pass through (partial rotary).
// YaRN (ext_factor 1) blends each pair's scaled and unscaled angle: pairs below yarn_low keep the unscaled one,
// pairs above yarn_high the scaled one, a linear ramp between (ggml's rope_yarn).
struct RopeSpec {
  float theta = 10000.0f;
  RopeLayout layout = RopeLayout::Adjacent;
  int rot_dims = 0;  // 0: the whole head
  float freq_scale = 1.0f;
  float attn_factor = 1.0f;
  const float* freq_factors = nullptr;  // [rot_dims / 2], or none
  float ext_factor = 0.0f;              // 0: no YaRN
  float yarn_low = 0.0f, yarn_high = 0.0f;
};

// The cos and sin (times attn_factor) that rotate pair i of rot at a position: one definition for every backend.
PARLEY_HD inline void rope_cos_sin(const RopeSpec& spec, int position, int i, int rot, float* c, float* s) {
  float freq = 1.0f / powf(spec.theta, static_cast<float>(2 * i) / static_cast<float>(rot));
  if (spec.freq_factors) freq /= spec.freq_factors[i];
  float val;
  if (spec.ext_factor == 0.0f) {
    val = static_cast<float>(position) * spec.freq_scale * freq;
  } else {
    const float extrap = static_cast<float>(position) * freq, interp = spec.freq_scale * extrap;
    const float y = (static_cast<float>(i) - spec.yarn_low) / fmaxf(0.001f, spec.yarn_high - spec.yarn_low);
    const float mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * spec.ext_factor;
    val = interp * (1.0f - mix) + extrap * mix;
  }
  *c = cosf(val) * spec.attn_factor;
  *s = sinf(val) * spec.attn_factor;
}

// The score of one (query, key) pair is softcap(q . k * scale); a query at position p sees keys at positions
// [p - window + 1, p] (window 0: all of [0, p]). The CUDA attention kernels take it as it is.
struct AttentionSpec {
  float scale = 0.0f;    // 0: 1/sqrt(head_dim)
  float softcap = 0.0f;  // > 0: cap * tanh(score / cap)
  int window = 0;
  const float* sinks = nullptr;  // [n_heads] host logits each head's softmax denominator also sums (CPU only)
  PARLEY_HD int first_key(int pos) const { return window > 0 && pos >= window ? pos - window + 1 : 0; }
  PARLEY_HD float score_scale(int head_dim) const {
    return scale > 0.0f ? scale : 1.0f / sqrtf(static_cast<float>(head_dim));
  }
};

// A weight matrix [N][K] repacked for the matmul: panels of 16 columns, [N/16 rounded up][K][16],
// the last panel zero-padded. Packed once at load; every step then streams it front to back.
struct PackedMatrix {
  int N = 0, K = 0;
  WeightBuffer data;
  static constexpr int kPanel = 16;
  int panels() const { return (N + kPanel - 1) / kPanel; }
};
PackedMatrix pack_matrix(const float* w, int N, int K);

// One paged_attention call's arguments, as each tile of it reads them (see SimdKernels::attention_tile).
struct AttentionCall {
  const float* q;
  const KvLayerView* kv;
  const AttentionMetadata* meta;
  int n_heads, n_kv_heads, head_dim;
  AttentionSpec spec;
  float* out;
};

// Function pointers of one instruction set's vectorized kernels.
struct SimdKernels {
  Isa isa;
  // out[m][n] = sum_k x[m][k] * w[n][k] for rows m in [0, M) and the packed panels [p_begin, p_end).
  void (*matmul)(const float* x, const float* packed, float* out, int M, int N, int K, int p_begin, int p_end);
  float (*dot)(const float* a, const float* b, int n);
  void (*axpy)(float a, const float* x, float* y, int n);  // y += a * x
  // out = silu(gate) * up elementwise, with a vector exp (within a few ulp of reference::swiglu).
  void (*swiglu)(const float* gate, const float* up, float* out, int n);
  // out = gelu_tanh(gate) * up, and gelu_tanh(x) alone (out may be x): GELU's tanh form as x * sigmoid(2u), the
  // same vector exp (within a few ulp of reference::gelu_tanh).
  void (*geglu)(const float* gate, const float* up, float* out, int n);
  void (*gelu)(const float* x, float* out, int n);
  // One row's LayerNorm, its sums in W float lanes (within float rounding of reference::layernorm's double sums).
  void (*layernorm)(const float* x, const float* weight, const float* bias, float* out, int n, float eps);
  // The attention of the batch tokens [token_begin, token_end), all of one sequence, at the query heads of kv
  // heads [kv_begin, kv_end); each query's bits depend on its own keys only (simd_impl.hpp). scratch: the
  // calling thread's, grown as needed.
  void (*attention_tile)(const AttentionCall& call, int token_begin, int token_end, int kv_begin, int kv_end,
                         std::vector<float>& scratch);
  void (*to_f16)(const float* x, uint16_t* out, int n);  // round to nearest even (F16C where the ISA has it)
  // Runs iters rounds of independent register FMAs (2 * W * 10 flops a round): the peak probe for benchmarks.
  float (*fma_probe)(int64_t iters);
  int lanes;  // W, floats per vector
};
SimdKernels generic_kernels();
SimdKernels avx2_kernels();
SimdKernels avx512_kernels();

class CpuBackend {
 public:
  // threads <= 0 means all hardware threads; Isa::Auto picks the best the CPU supports.
  explicit CpuBackend(int threads = 0, Isa isa = Isa::Auto);

  Isa isa() const { return simd_.isa; }
  int threads() const { return threads_; }
  const SimdKernels& simd() const { return simd_; }

  // out[M][N] = x[M][K] * w[N][K]^T, with w packed by pack_matrix
  void matmul(const float* x, const PackedMatrix& w, float* out, int M) const;
  // The same with w in its file's ggml type (quant_matrix.hpp): activations quantized per row, integer dots.
  void matmul(const float* x, const QuantMatrix& w, float* out, int M) const;
  // out[m] = x[m] / rms(x[m]) * weight, per row of width dim
  void rmsnorm(const float* x, const float* weight, float* out, int M, int dim, float eps) const;
  // Rotates every head of x[M][n_heads * head_dim] in place by its token's position.
  void rope(float* x, const int* positions, int M, int n_heads, int head_dim, const RopeSpec& spec) const;
  void rope(float* x, const int* positions, int M, int n_heads, int head_dim, float theta, RopeLayout layout) const {
    rope(x, positions, M, n_heads, head_dim, RopeSpec{theta, layout});
  }
  // out[m] = silu(gate) * up (SwiGLU) or gelu_tanh(gate) * up (GeGLU), elementwise, for M rows laid out
  // [gate: hidden | up: hidden]
  void swiglu_rows(const float* gate_up, float* out, int M, int hidden) const;
  void geglu_rows(const float* gate_up, float* out, int M, int hidden) const;
  // x[M][n] = gelu_tanh(x + bias) in place (bias [n] may be null): an ungated FFN's activation (BERT).
  void gelu_rows(float* x, const float* bias, int M, int n) const;
  // x[m] = (x[m] + bias) + residual[m] for M rows of width n; bias ([n]) and residual ([M][n]) may be null. One
  // pass over rows that no longer fit in cache, where an add each was one pass each.
  void add_rows(float* x, const float* bias, const float* residual, int M, int n) const;
  // Each row of x[M][sum of the widths], bias ([that sum], may be null) added, copied out in column slices
  // (the fused Q/K/V projection into q, k and v).
  struct ColumnSlice {
    float* out;  // [M][width]
    int width;
  };
  void split_columns(const float* x, const float* bias, int M, std::initializer_list<ColumnSlice> slices) const;
  // out[m] = (x[m] - mean) / sqrt(var + eps) * weight + bias, per row of width dim (LayerNorm); out may be x
  void layernorm(const float* x, const float* weight, const float* bias, float* out, int M, int dim, float eps) const;
  // out[m] = table[tokens[m]]
  void embedding(const float* table, const int* tokens, int M, int dim, float* out) const;
  // Writes each token's k and v rows ([M][kv_dim]) to its slot.
  void kv_write(const KvLayerView& kv, const float* k, const float* v, const int64_t* slots, int M) const;
  // Attention of each token over its own sequence's positions that spec lets it see: causal, or up to
  // meta.key_ends where set (bidirectional).
  // q, out: [num_tokens][n_heads * head_dim]; grouped-query heads share kv head h / (n_heads/n_kv_heads).
  void paged_attention(const float* q, const KvLayerView& kv, const AttentionMetadata& meta, int n_heads,
                       int n_kv_heads, int head_dim, float* out, const AttentionSpec& spec = {}) const;

 private:
  SimdKernels simd_;
  int threads_;
};

}  // namespace parley::cpu
