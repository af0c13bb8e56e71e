// The shape and weights of a Llama-family model, independent of the file it came from.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/moe_routing.hpp"
#include "kernels/rope_layout.hpp"

namespace parley {

// How an embedding model makes one vector of a sequence's final-normed hidden states (llama.cpp's
// llama_pooling_type, the GGUF key {arch}.pooling_type: the values are the file's).
enum class PoolingType {
  None = 0,  // no pooling: a generative model
  Mean = 1,  // the mean over every token of the sequence
  Cls = 2,   // the first token's
  Last = 3,  // the last token's (Qwen3-Embedding)
  Rank = 4,  // a reranker's score: a classifier head over one token's (qwen3: the last; others: the first)
};

// The FFN's gate activation: out = act(gate) * up.
enum class FfnActivation {
  Silu,       // SwiGLU: Llama, Qwen, Phi-3
  GeluTanh,   // GeGLU with GELU's tanh approximation: Gemma
  SwigluOai,  // gpt-oss: the gate capped at 7, up clamped to +-7, gate * sigmoid(1.702 gate) * (up + 1)
  Gelu,       // no gate: out = gelu_tanh(up) (BERT)
};

// How the router's logits become the chosen experts' weights (llama.cpp's expert_gating_func).
enum class ExpertGating {
  Softmax,          // softmax over every expert, then the top k (Qwen-MoE, Mixtral)
  SoftmaxSelected,  // the top k logits, then softmax over those only (gpt-oss)
};

// A mixture-of-experts FFN: each token's router picks n_used of n_experts SwiGLU experts and sums their outputs,
// weighted. Zero experts means a dense FFN of hidden_dim.
struct MoeConfig {
  int n_experts = 0;
  int n_used = 0;         // experts per token (top-k)
  int expert_hidden = 0;  // each expert's FFN width
  int shared_hidden = 0;  // the shared expert's width, added for every token (Qwen2-MoE); 0: none
  ExpertGating gating = ExpertGating::Softmax;
  bool normalize = false;      // the chosen weights divided by their sum
  float weights_scale = 1.0f;  // the chosen weights multiplied by this
  bool expert_biases = false;  // the router and every expert matrix carry a bias (gpt-oss)

  bool enabled() const { return n_experts > 0; }
  // Weight elements of one layer's experts for a model `dim` wide: the router, every expert (or the n_used one
  // token runs through) and the shared expert.
  int64_t ffn_elements(int64_t dim, bool active_only) const {
    return dim * n_experts + 3 * dim * expert_hidden * (active_only ? n_used : n_experts) + 3 * dim * shared_hidden;
  }
  // The routing as kernels/moe_routing.hpp runs it (on the CPU and on the device).
  moe::Routing routing() const {
    return {n_experts, n_used, gating == ExpertGating::Softmax, normalize, weights_scale};
  }
};

// The rotary embedding of one kind of layer.
struct RopeConfig {
  float theta = 10000.0f;   // frequency base
  float freq_scale = 1.0f;  // linear position scaling (1 / rope.scaling.factor)
};

// The shape and the per-architecture math of a model; model/architecture.cpp fills it from a GGUF's keys.
// The defaults are Llama 2's, so a llama2.c checkpoint needs only the sizes.
struct LlamaConfig {
  int dim = 0;         // embedding width
  int hidden_dim = 0;  // FFN inner width
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;  // < n_heads means grouped-query attention
  int vocab_size = 0;
  int max_seq_len = 0;          // context length
  float rope_theta = 10000.0f;  // global layers' RoPE base
  float norm_eps = 1e-5f;
  RopeLayout rope_layout = RopeLayout::Adjacent;
  bool tied_output = true;  // the output head reuses the token embedding

  std::string arch = "llama";  // general.architecture
  int head_size = 0;           // attention.key_length; 0 means dim / n_heads

  int rope_dims = 0;              // rotated dimensions of a head (partial rotary); 0 means all
  float rope_freq_scale = 1.0f;   // global layers' linear position scaling
  float rope_attn_factor = 1.0f;  // multiplies RoPE's cos and sin (LongRoPE's attention factor)
  int rope_original_context = 0;  // LongRoPE: the context its short factors serve (the long ones serve beyond); YaRN's
  bool rope_yarn = false;         // YaRN: each frequency blends its scaled and unscaled angle by a ramp over dimensions
  float yarn_beta_fast = 32.0f;   // YaRN's ramp: frequencies with fewer turns than beta_slow in the original context
  float yarn_beta_slow = 1.0f;    // are scaled, those with more than beta_fast are not
  RopeConfig local_rope;          // the RoPE of sliding-window layers
  int sliding_window = 0;         // tokens a sliding-window layer sees, itself included; 0: no such layers
  int sliding_window_period = 0;  // layer l slides when l % period < period - 1 (llama.cpp's swa pattern)
  float query_scale = 0.0f;       // attention score scale; 0 means 1/sqrt(head_dim)
  float attn_softcap = 0.0f;      // score = cap * tanh(score / cap) when > 0 (Gemma 2)
  float final_softcap = 0.0f;     // the same on the output logits
  bool scale_embeddings = false;  // embeddings times sqrt(dim) (Gemma)
  bool qkv_bias = false;          // Q, K and V projections carry biases (Qwen2)
  bool attn_out_bias = false;     // the attention output projection carries a bias (gpt-oss)
  bool attn_sinks = false;        // a learned logit per head joins each attention softmax's denominator (gpt-oss)
  bool qk_norm = false;           // per-head RMSNorm of Q and K before RoPE (Qwen3, Gemma 3)
  bool post_norms = false;        // RMSNorm after attention and after the FFN, before each residual add (Gemma 2/3)
  // A BERT-family encoder (bert, nomic-bert): attention sees the whole sequence; LayerNorms with biases follow the
  // embeddings and each residual add (post-norm); token type 0's row joins every token; no final norm, no head.
  bool encoder = false;
  bool learned_positions = false;  // absolute position embeddings added to the tokens' (BERT); else RoPE
  bool ffn_bias = false;           // ffn_up and ffn_down carry biases (BERT)
  FfnActivation activation = FfnActivation::Silu;
  MoeConfig moe;                               // experts in place of the dense FFN when moe.enabled()
  PoolingType pooling = PoolingType::None;     // {arch}.pooling_type, or --pooling
  std::vector<std::string> classifier_labels;  // {arch}.classifier.output_labels: the rank head's outputs

  int head_dim() const { return head_size > 0 ? head_size : dim / n_heads; }
  int q_dim() const { return head_dim() * n_heads; }
  int kv_dim() const { return head_dim() * n_kv_heads; }
  int rotary_dims() const { return rope_dims > 0 ? rope_dims : head_dim(); }
  bool is_sliding_layer(int layer) const {
    return sliding_window > 0 && sliding_window_period > 0 && layer % sliding_window_period < sliding_window_period - 1;
  }
  // Weights of the matrices (embedding, head when untied, attention, FFN or experts with their router); with
  // active_only, of the experts only the n_used a token runs through.
  int64_t parameter_count(bool active_only) const;
  // Throws std::invalid_argument naming the inconsistent field.
  void validate() const;
};

}  // namespace parley
