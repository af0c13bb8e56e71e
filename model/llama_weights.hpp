// A model's weights as loaded: the matrices in their file's type (model/weight_matrix.hpp), vectors in F32.
#pragma once
#include <optional>
#include <vector>

#include "model/llama_config.hpp"
#include "model/weight_matrix.hpp"

namespace parley {

// A mixture-of-experts FFN's weights (config.moe), each expert's matrices apart: GGUF stores each kind as one
// 3-D tensor [n_experts][rows][cols], whose experts are consecutive row ranges. Empty for a dense FFN.
struct ExpertWeights {
  WeightMatrix router;                      // [n_experts][dim] (ffn_gate_inp)
  std::vector<float> router_bias;           // [n_experts] when expert_biases
  std::vector<WeightMatrix> gate, up;       // n_experts of [expert_hidden][dim]
  std::vector<WeightMatrix> down;           // n_experts of [dim][expert_hidden]
  std::vector<float> gate_bias, up_bias;    // [n_experts][expert_hidden] when expert_biases
  std::vector<float> down_bias;             // [n_experts][dim] when expert_biases
  std::vector<float> shared_gate;           // [dim]: the shared expert's sigmoid gate, when shared_hidden > 0
  WeightMatrix shared_w_gate, shared_w_up;  // [shared_hidden][dim]
  WeightMatrix shared_w_down;               // [dim][shared_hidden]
};

// A LayerNorm's scale and shift, [dim] each (BERT-family encoders).
struct LayerNormWeights {
  std::vector<float> weight, bias;
};

// Every matrix is row-major [out][in], as GGUF and llama2.c store them, in its file's type; vectors in F32.
// The optional tensors are empty unless the config's flag asks for them.
struct LayerWeights {
  std::vector<float> attn_norm;                      // [dim]
  WeightMatrix wq;                                   // [q_dim][dim]
  WeightMatrix wk;                                   // [kv_dim][dim]
  WeightMatrix wv;                                   // [kv_dim][dim]
  WeightMatrix wo;                                   // [dim][q_dim]
  std::vector<float> ffn_norm;                       // [dim]
  WeightMatrix w_gate;                               // [hidden][dim]  (llama2.c w1)
  WeightMatrix w_down;                               // [dim][hidden]  (llama2.c w2)
  WeightMatrix w_up;                                 // [hidden][dim]  (llama2.c w3)
  std::vector<float> bq, bk, bv;                     // [q_dim], [kv_dim], [kv_dim] when qkv_bias
  std::vector<float> bo;                             // [dim] when attn_out_bias
  std::vector<float> attn_sinks;                     // [n_heads] when attn_sinks
  std::vector<float> q_norm, k_norm;                 // [head_dim] each when qk_norm
  std::vector<float> post_attn_norm, post_ffn_norm;  // [dim] each when post_norms
  ExpertWeights experts;                             // in place of w_gate, w_up and w_down when moe.enabled()
  // An encoder's post-norms (attn_output_norm, layer_output_norm) in place of attn_norm and ffn_norm.
  LayerNormWeights attn_out_norm, layer_out_norm;
  std::vector<float> b_up, b_down;  // [hidden], [dim] when ffn_bias
};

// A multi-token-prediction module in DeepSeek-V3's form (GGUF: the "nextn" block after the main layers,
// {arch}.nextn_predict_layers = 1): from the main model's last hidden state at position p and the embedding
// of token p + 1 it predicts token p + 2, through one transformer block with its own KV and the shared head.
struct MtpWeights {
  std::vector<float> enorm;  // [dim] RMSNorm of the next token's embedding
  std::vector<float> hnorm;  // [dim] RMSNorm of the hidden state
  WeightMatrix eh_proj;      // [dim][2 * dim] over concat(enorm(embedding), hnorm(hidden))
  LayerWeights layer;
  std::vector<float> shared_head_norm;  // [dim] before the model's output head
};

struct LlamaWeights {
  WeightMatrix token_embedding;  // [vocab][dim]
  std::vector<LayerWeights> layers;
  std::vector<float> output_norm;  // [dim]
  WeightMatrix output;             // [vocab][dim]; empty when tied to token_embedding
  std::vector<float>
      rope_freq_factors;            // [rotary_dims / 2] divisors of each RoPE frequency (Llama 3.1, LongRoPE), or empty
  std::optional<MtpWeights> mtp;    // present when the file has a multi-token-prediction head
  WeightMatrix cls_out;             // [n_cls_out][dim]: a reranker's classifier (cls.output.weight), or empty
  std::vector<float> cls_out_bias;  // [n_cls_out] (cls.output.bias), or empty
  WeightMatrix cls;                 // [dim][dim]: a cross-encoder's dense layer before the classifier, tanh after
  std::vector<float> cls_bias;      // [dim] (cls.bias), or empty
  // Encoders: the embedding's other parts and its LayerNorm (token_embd_norm); output_norm is then empty.
  WeightMatrix position_embedding;  // [context][dim] absolute positions (BERT), or empty
  std::vector<float> token_type;    // [dim]: token type 0's row (token_types.weight), or empty
  LayerNormWeights embedding_norm;

  const WeightMatrix& output_head() const { return output.empty() ? token_embedding : output; }
};

}  // namespace parley
