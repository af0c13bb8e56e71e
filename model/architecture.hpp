// The architectures Parley runs, one table row each: how a GGUF's general.architecture changes the one forward
// pass (model/llama.cpp). The rows follow llama.cpp's reading of the same keys and tensors.
#pragma once
#include <string>
#include <string_view>

#include "kernels/cpu/ops.hpp"
#include "model/llama_config.hpp"

namespace parley {

class GgufFile;

// Where an architecture's sliding-window layers come from.
enum class SlidingWindows {
  None,     // every layer is global
  Default,  // always on: attention.sliding_window (default_window when absent) on the period's local layers
  IfKey,    // on only when the file has attention.sliding_window
  Ignored,  // the key exists but llama.cpp runs every layer global (Phi-3), so Parley does too
};

// Where an architecture's experts come from, when it has them.
struct MoeSpec {
  enum class Experts { None, Optional, Required } experts = Experts::None;
  ExpertGating gating = ExpertGating::Softmax;  // unless the file has expert_gating_func
  bool normalize = false;                       // unless the file has expert_weights_norm
  bool shared_expert = false;                   // a shared expert behind a sigmoid gate (ffn_*_shexp)
  bool width_is_dense = false;  // experts are feed_forward_length wide (Mixtral), not expert_feed_forward_length
  bool biases = false;          // the router and the experts carry biases (gpt-oss)
};

// A BERT-family encoder, and where its positions come from.
enum class EncoderKind {
  None,              // a decoder
  LearnedPositions,  // bert: absolute position embeddings
  Rotary,            // nomic-bert: RoPE
};

struct ArchSpec {
  std::string_view name;
  RopeLayout rope;
  FfnActivation activation;
  bool qk_norm;           // attn_q_norm / attn_k_norm are required
  bool post_norms;        // post_attention_norm / post_ffw_norm are required
  bool scale_embeddings;  // embeddings times sqrt(n_embd)
  float attn_softcap;     // attn_logit_softcapping when the key is absent (0: never capped)
  float final_softcap;    // final_logit_softcapping when the key is absent (0: not capped)
  SlidingWindows windows;
  int default_window;        // with SlidingWindows::Default
  int default_period;        // attention.sliding_window_pattern when absent
  bool local_rope_unscaled;  // sliding layers keep scale 1 and rope.freq_base_swa (default 10000); else the global RoPE
  int big_model_layers;      // the block_count whose query scale is 1/sqrt(n_embd / n_head) (Gemma 27B); 0: none
  bool longrope_factors;     // rope_factors_long / rope_factors_short may replace rope_freqs (Phi-3)
  MoeSpec moe = {};
  bool attn_sinks = false;                 // attn_sinks per layer (gpt-oss)
  std::string_view ffn_norm = "ffn_norm";  // the FFN's input norm tensor (gpt-oss: post_attention_norm)
  EncoderKind encoder = EncoderKind::None;
};

// The row for a general.architecture value, or nullptr.
const ArchSpec* find_arch(std::string_view name);
// "llama, qwen2, ..." for error messages.
std::string known_archs();

// The RoPE of a layer with the given base and scaling: the config's layout, partial rotary, attention factor and
// YaRN, for every backend.
cpu::RopeSpec rope_spec(const LlamaConfig& c, const RopeConfig& rope, const float* freq_factors);

// The model's shape and math from a GGUF's metadata (and which optional tensors it has), refusing keys whose
// math Parley does not implement. Errors name the file and the key.
LlamaConfig config_from_gguf(const GgufFile& f);

}  // namespace parley
