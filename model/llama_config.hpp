// The shape and weights of a Llama-family model, independent of the file it came from.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parley {

// How RoPE pairs the dimensions of a head.
enum class RopeLayout {
  Adjacent,  // pairs (2i, 2i+1): llama2.c, llama.cpp's LLAMA_ROPE_TYPE_NORM
  NeoX,      // pairs (i, i + head_dim/2): GPT-NeoX, HF Llama, Qwen2
};

struct LlamaConfig {
  int dim = 0;          // embedding width
  int hidden_dim = 0;   // SwiGLU inner width
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;   // < n_heads means grouped-query attention
  int vocab_size = 0;
  int max_seq_len = 0;  // context length
  float rope_theta = 10000.0f;
  float norm_eps = 1e-5f;
  RopeLayout rope_layout = RopeLayout::Adjacent;
  bool tied_output = true;  // the output head reuses the token embedding

  int head_dim() const { return dim / n_heads; }
  int kv_dim() const { return head_dim() * n_kv_heads; }
  // Throws std::invalid_argument naming the inconsistent field.
  void validate() const;
};

// Every matrix is row-major [out][in], as GGUF and llama2.c store them, in F32.
struct LayerWeights {
  std::vector<float> attn_norm;  // [dim]
  std::vector<float> wq;         // [dim][dim]
  std::vector<float> wk;         // [kv_dim][dim]
  std::vector<float> wv;         // [kv_dim][dim]
  std::vector<float> wo;         // [dim][dim]
  std::vector<float> ffn_norm;   // [dim]
  std::vector<float> w_gate;     // [hidden][dim]  (llama2.c w1)
  std::vector<float> w_down;     // [dim][hidden]  (llama2.c w2)
  std::vector<float> w_up;       // [hidden][dim]  (llama2.c w3)
};

// A multi-token-prediction module in DeepSeek-V3's form (GGUF: the "nextn" block after the main layers,
// {arch}.nextn_predict_layers = 1): from the main model's last hidden state at position p and the embedding
// of token p + 1 it predicts token p + 2, through one transformer block with its own KV and the shared head.
struct MtpWeights {
  std::vector<float> enorm;             // [dim] RMSNorm of the next token's embedding
  std::vector<float> hnorm;             // [dim] RMSNorm of the hidden state
  std::vector<float> eh_proj;           // [dim][2 * dim] over concat(enorm(embedding), hnorm(hidden))
  LayerWeights layer;
  std::vector<float> shared_head_norm;  // [dim] before the model's output head
};

struct LlamaWeights {
  std::vector<float> token_embedding;  // [vocab][dim]
  std::vector<LayerWeights> layers;
  std::vector<float> output_norm;  // [dim]
  std::vector<float> output;       // [vocab][dim]; empty when tied to token_embedding
  std::optional<MtpWeights> mtp;   // present when the file has a multi-token-prediction head

  const std::vector<float>& output_head() const { return output.empty() ? token_embedding : output; }
};

}  // namespace parley
