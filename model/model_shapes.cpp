#include "model/model_shapes.hpp"

#include <cmath>
#include <stdexcept>

#include "model/random_model.hpp"

namespace parley {
namespace {

LlamaConfig sizes(const char* arch, int dim, int hidden, int layers, int heads, int kv_heads, int head_size, int vocab,
                  int context, float theta) {
  LlamaConfig c;
  c.arch = arch;
  c.dim = dim, c.hidden_dim = hidden, c.n_layers = layers, c.n_heads = heads, c.n_kv_heads = kv_heads;
  c.head_size = head_size, c.vocab_size = vocab, c.max_seq_len = context, c.rope_theta = theta;
  c.rope_layout = c.arch == "llama" ? RopeLayout::Adjacent : RopeLayout::NeoX;
  c.tied_output = true;
  c.norm_eps = c.arch == "llama" ? 1e-5f : 1e-6f;
  return c;
}

void make_qwen2(LlamaConfig& c) { c.qkv_bias = true; }
void make_qwen3(LlamaConfig& c) { c.qk_norm = true; }
void make_gemma(LlamaConfig& c, int window, int period) {
  c.activation = FfnActivation::GeluTanh;
  c.post_norms = true;
  c.scale_embeddings = true;
  c.sliding_window = window;
  c.sliding_window_period = period;
  c.query_scale = 1.0f / std::sqrt(float(c.head_dim()));
}
void make_gemma2(LlamaConfig& c, int window, float attn_cap, float final_cap) {
  make_gemma(c, window, 2);
  c.attn_softcap = attn_cap;
  c.final_softcap = final_cap;
  c.local_rope = {c.rope_theta, c.rope_freq_scale};
}
void make_gemma3(LlamaConfig& c, int window) {
  make_gemma(c, window, 6);
  c.qk_norm = true;
  c.local_rope = {10000.0f, 1.0f};
}

}  // namespace

ModelShape tiny_arch_shape(std::string_view arch) {
  ModelShape s;
  LlamaConfig& c = s.config;
  if (arch == "llama") {
    c = sizes("llama", 64, 160, 3, 4, 2, 32, 512, 512, 500000.0f);
    c.tied_output = false;
    s.rope_factors = true;
  } else if (arch == "qwen2") {
    c = sizes("qwen2", 64, 160, 3, 4, 2, 0, 512, 512, 1000000.0f);
    make_qwen2(c);
  } else if (arch == "qwen3") {
    c = sizes("qwen3", 64, 160, 3, 4, 2, 32, 512, 512, 1000000.0f);
    make_qwen3(c);
  } else if (arch == "gemma2") {
    c = sizes("gemma2", 64, 160, 4, 4, 2, 32, 512, 512, 10000.0f);
    make_gemma2(c, 12, 1.0f, 2.0f);  // caps small enough that random weights' scores reach them
  } else if (arch == "gemma3") {
    c = sizes("gemma3", 64, 160, 6, 4, 1, 32, 512, 512, 1000000.0f);
    c.rope_freq_scale = 1.0f / 8.0f;
    make_gemma3(c, 8);
  } else if (arch == "phi3") {
    c = sizes("phi3", 64, 160, 3, 4, 2, 0, 512, 512, 10000.0f);
    c.tied_output = false;
    c.rope_dims = 12;  // of 16: partial rotary, as Phi-4-mini
    c.rope_original_context = 32;
    c.rope_attn_factor = std::sqrt(1.0f + std::log(512.0f / 32.0f) / std::log(32.0f));  // Phi-3's LongRoPE scale
    s.rope_factors = true;
  } else {
    throw std::invalid_argument("unknown architecture '" + std::string(arch) + "' (known: " + known_tiny_archs() + ")");
  }
  return s;
}

std::string known_tiny_archs() { return "llama, qwen2, qwen3, gemma2, gemma3, phi3"; }

ModelShape named_shape(std::string_view name) {
  ModelShape s;
  LlamaConfig& c = s.config;
  if (name == "builtin") {
    c = builtin_model_config();
  } else if (name == "110m") {
    c = bench_110m_config();
  } else if (name == "llama3.2-1b") {
    c = sizes("llama", 2048, 8192, 16, 32, 8, 0, 128256, 131072, 500000.0f);
    s.rope_factors = true;
  } else if (name == "qwen2.5-0.5b") {
    c = sizes("qwen2", 896, 4864, 24, 14, 2, 0, 151936, 32768, 1000000.0f);
    make_qwen2(c);
  } else if (name == "qwen3-0.6b") {
    c = sizes("qwen3", 1024, 3072, 28, 16, 8, 128, 151936, 40960, 1000000.0f);
    make_qwen3(c);
  } else if (name == "gemma3-1b") {
    c = sizes("gemma3", 1152, 6912, 26, 4, 1, 256, 262144, 32768, 1000000.0f);
    make_gemma3(c, 512);
  } else if (name == "phi3-mini") {
    c = sizes("phi3", 3072, 8192, 32, 32, 32, 0, 32064, 4096, 10000.0f);
    c.tied_output = false;
  } else if (name == "smollm2-135m") {
    c = sizes("llama", 576, 1536, 30, 9, 3, 0, 49152, 8192, 100000.0f);
  } else {
    throw std::invalid_argument("unknown shape '" + std::string(name) + "' (known: " + known_shapes() + ")");
  }
  return s;
}

std::string known_shapes() {
  return "builtin, 110m, llama3.2-1b, qwen2.5-0.5b, qwen3-0.6b, gemma3-1b, phi3-mini, smollm2-135m";
}

}  // namespace parley
