// The Llama forward pass over a flattened batch of sequences at different positions.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "model/architecture.hpp"
#include "model/classifier_head.hpp"
#include "model/kv_cache.hpp"
#include "model/linear.hpp"
#include "model/llama_weights.hpp"
#include "model/moe_ffn.hpp"

namespace parley {

// The model runner's input for one step: every scheduled token of every sequence, flattened. Each KV group
// (model/kv_cache_layout.hpp) has its own block tables and slots; one group is the plain case.
struct ForwardBatch {
  std::vector<int> token_ids;         // [num_tokens]
  std::vector<int> positions;         // [num_tokens] position within its sequence
  std::vector<int> token_seq;         // [num_tokens] row of block_tables the token belongs to
  std::vector<int64_t> slot_mapping;  // [num_kv_groups][num_tokens] KV slot the token writes
  std::vector<int> block_tables;      // [num_kv_groups][num_seqs][max_blocks_per_seq]
  int max_blocks_per_seq = 0;
  int num_kv_groups = 1;
  std::vector<int> logits_indices;  // tokens whose next-token logits are wanted
  std::vector<int> hidden_indices;  // tokens whose final-normed hidden state is wanted (pooling), in any order

  int num_tokens() const { return static_cast<int>(token_ids.size()); }
  int num_seqs() const {
    return max_blocks_per_seq > 0 ? int(block_tables.size()) / (num_kv_groups * max_blocks_per_seq) : 0;
  }
  const int* group_block_tables(int g) const {
    return block_tables.data() + size_t(g) * num_seqs() * max_blocks_per_seq;
  }
  const int64_t* group_slot_mapping(int g) const { return slot_mapping.data() + size_t(g) * num_tokens(); }
};

class LlamaModel {
 public:
  // Takes the weights; fuses Q/K/V and gate/up into one matrix each where their types agree (same bits, fewer
  // passes) and packs every matrix for the matmul, quantized ones in their file's type.
  LlamaModel(const LlamaConfig& config, LlamaWeights weights, const cpu::CpuBackend& backend);

  const LlamaConfig& config() const { return config_; }
  const cpu::CpuBackend& backend() const { return *backend_; }
  // The matrices' resident bytes (packed, in their types), embedding included.
  size_t weight_bytes() const;
  // What a decode step of one token reads: the layers' matrices (of experts, the router, the shared expert and the
  // n_used experts' share) and the head (not a separate embedding, read by rows).
  size_t streamed_weight_bytes() const;
  // Weight elements a token multiplies: through the layers' matrices (its experts only), and through the head
  // (logits rows only).
  size_t layer_weight_elements() const;
  size_t head_weight_elements() const { return size_t(output_.N()) * size_t(output_.K()); }

  // Runs the batch, writing its KV into kv, and fills logits[logits_indices.size()][vocab_size].
  // num_layers < n_layers runs only the first layers, then the final norm and head (layer-skip drafting).
  void forward(const ForwardBatch& batch, KvCache& kv, std::vector<float>& logits, int num_layers = -1);
  // The hidden state of every token of the last forward() (before the final norm): [num_tokens][dim].
  // Valid until the next forward() or mtp_forward().
  std::span<const float> hidden_states() const { return {x_.data(), size_t(last_num_tokens_) * size_t(config_.dim)}; }
  // The hidden state after the final norm (what the head reads, llama.cpp's t_embd) of each token the last
  // forward() named in hidden_indices, in that order: [hidden_indices.size()][dim].
  std::span<const float> normed_hidden_states() const { return normed_; }

  // The multi-token-prediction head, when the file has one: token i of the batch at position p, with
  // prev_hidden[i] the hidden state at p (the main model's, or this head's own when drafting further),
  // predicts the token after it. Writes the head's KV into kv (one layer), fills logits as forward() does
  // and hidden_out[num_tokens][dim] with the head's hidden states (the next draft's prev_hidden).
  bool has_mtp() const { return mtp_.has_value(); }
  // A reranker's head over the pooled hidden state (cls.output.weight), or nullptr.
  const ClassifierHead* classifier() const { return classifier_ ? &*classifier_ : nullptr; }
  void mtp_forward(const ForwardBatch& batch, std::span<const float> prev_hidden, KvCache& kv,
                   std::vector<float>& logits, std::vector<float>& hidden_out);

 private:
  struct Layer {
    std::vector<float> attn_norm, ffn_norm;
    Linear wqkv, wo, w_gate_up, w_down;
    std::optional<MoeFfn> moe;                         // in place of w_gate_up and w_down when the config has experts
    std::vector<float> bqkv;                           // [q_dim + 2 kv_dim] when the config has biases
    std::vector<float> bo;                             // [dim] when attn_out_bias
    std::vector<float> attn_sinks;                     // [n_heads] when attn_sinks
    std::vector<float> q_norm, k_norm;                 // [head_dim] when the config has QK-norm
    std::vector<float> post_attn_norm, post_ffn_norm;  // [dim] when the config has post-norms
    LayerNormWeights attn_out_norm, layer_out_norm;    // an encoder's, after each residual add
    std::vector<float> b_up, b_down;                   // [hidden], [dim] when ffn_bias
    bool sliding = false;                              // attends only to the sliding window, with the local RoPE
  };
  struct Mtp {
    std::vector<float> enorm, hnorm, shared_head_norm;
    Linear eh_proj;
    Layer layer;
  };
  Layer pack_layer(LayerWeights& w, bool sliding) const;
  // x[i] += y[i] for n floats (one row; whole activations go through the backend's add_rows, in parallel).
  static void add_into(float* x, const float* y, int64_t n);
  // A layer's matrices' bytes; of its experts only the share one token reads when active_only.
  static size_t layer_bytes(const Layer& l, bool active_only);
  // Checks the batch and sizes the scratch for it; returns the attention metadata pointing into it.
  cpu::AttentionMetadata prepare(const ForwardBatch& batch);
  // One transformer block over x_ in place, writing its KV.
  // Layer l of the batch over KV group group_of_layer[l]'s tables.
  void run_layer(Layer& layer, int l, KvCache& kv, const ForwardBatch& batch, cpu::AttentionMetadata meta);
  // An encoder's block (model/encoder_layer.cpp): attention and FFN each added to x_, then LayerNormed.
  void run_encoder_layer(Layer& layer, int l, KvCache& kv, const ForwardBatch& batch, cpu::AttentionMetadata meta);
  // Self-attention of the rows `in` (Q/K/V, RoPE, the KV write, attention, output projection) into xb_, plus
  // residual's rows when not null (an encoder's post-norm block adds them before its LayerNorm).
  void attend(const Layer& layer, int l, KvCache& kv, const ForwardBatch& batch, cpu::AttentionMetadata meta,
              const float* in, const float* residual);
  // The FFN (dense or experts) of the rows `in` into xb_, plus residual's rows when not null.
  void feed_forward(Layer& layer, const float* in, int M, const float* residual);
  // Encoders: each token's sequence length in this batch (every sequence whole), into key_ends_.
  void encoder_key_ends(const ForwardBatch& batch);
  // Encoders: token type 0, absolute positions and the embeddings' LayerNorm over x_.
  void encoder_embed(const ForwardBatch& batch);
  // The token embeddings of the batch into x_ (scaled where the architecture scales them).
  void embed(const ForwardBatch& batch);
  // Q and K of one layer rotated in place by the layer's RoPE.
  void rotate(const Layer& layer, const ForwardBatch& batch);
  // The final norm and head over the rows of x_ named by logits_indices.
  void head(const ForwardBatch& batch, const std::vector<float>& norm, std::vector<float>& logits);
  // The final norm over the rows of x_ named by hidden_indices, into normed_.
  void normed_rows(const ForwardBatch& batch);
  LlamaConfig config_;
  const cpu::CpuBackend* backend_;
  WeightMatrix token_embedding_;  // rows looked up by token id, decoded one at a time; empty when tied
  Linear output_;                 // the head, packed; when tied, also the embedding's rows
  std::vector<float> output_norm_;
  std::vector<float> rope_freq_factors_;   // [rotary_dims / 2], or empty
  std::vector<float> position_embedding_;  // encoders: [context][dim] absolute positions, or empty
  std::vector<float> token_type_;          // encoders: [dim], or empty
  LayerNormWeights embedding_norm_;        // encoders
  std::vector<int> key_ends_;              // encoders: [num_tokens] for the attention metadata
  std::vector<Layer> layers_;
  std::optional<Mtp> mtp_;
  std::optional<ClassifierHead> classifier_;
  // Scratch reused across steps; grows to the largest batch seen.
  std::vector<float> x_, xb_, qkv_, q_, k_, v_, attn_, hb_, hidden_, selected_, concat_, part_, normed_;
  int last_num_tokens_ = 0;
};

}  // namespace parley
