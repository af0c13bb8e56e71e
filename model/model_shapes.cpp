#include "model/model_shapes.hpp"

#include <cmath>
#include <stdexcept>
#include <utility>

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

ModelShape shape(LlamaConfig c, bool rope_factors = false) { return {std::move(c), rope_factors}; }

struct NamedShape {
  std::string_view name;
  ModelShape (*make)();
};

// Tiny: dim 64, vocab 512, context 512; each row turns on what its architecture has.
constexpr NamedShape kTiny[] = {
    {"llama", [] {
       LlamaConfig c = sizes("llama", 64, 160, 3, 4, 2, 32, 512, 512, 500000.0f);
       c.tied_output = false;
       return shape(c, true);
     }},
    {"qwen2", [] {
       LlamaConfig c = sizes("qwen2", 64, 160, 3, 4, 2, 0, 512, 512, 1000000.0f);
       make_qwen2(c);
       return shape(c);
     }},
    {"qwen3", [] {
       LlamaConfig c = sizes("qwen3", 64, 160, 3, 4, 2, 32, 512, 512, 1000000.0f);
       make_qwen3(c);
       return shape(c);
     }},
    {"gemma2", [] {
       LlamaConfig c = sizes("gemma2", 64, 160, 4, 4, 2, 32, 512, 512, 10000.0f);
       make_gemma2(c, 12, 1.0f, 2.0f);  // caps small enough that random weights' scores reach them
       return shape(c);
     }},
    {"gemma3", [] {
       LlamaConfig c = sizes("gemma3", 64, 160, 6, 4, 1, 32, 512, 512, 1000000.0f);
       c.rope_freq_scale = 1.0f / 8.0f;
       make_gemma3(c, 8);
       return shape(c);
     }},
    {"phi3", [] {
       LlamaConfig c = sizes("phi3", 64, 160, 3, 4, 2, 0, 512, 512, 10000.0f);
       c.tied_output = false;
       c.rope_dims = 12;  // of 16: partial rotary, as Phi-4-mini
       c.rope_original_context = 32;
       c.rope_attn_factor = std::sqrt(1.0f + std::log(512.0f / 32.0f) / std::log(32.0f));  // Phi-3's LongRoPE scale
       return shape(c, true);
     }},
};

// The originals' sizes, heads, head size, context and RoPE base.
constexpr NamedShape kReal[] = {
    {"builtin", [] { return shape(builtin_model_config()); }},
    {"110m", [] { return shape(bench_110m_config()); }},
    {"llama3.2-1b", [] { return shape(sizes("llama", 2048, 8192, 16, 32, 8, 0, 128256, 131072, 500000.0f), true); }},
    {"qwen2.5-0.5b", [] {
       LlamaConfig c = sizes("qwen2", 896, 4864, 24, 14, 2, 0, 151936, 32768, 1000000.0f);
       make_qwen2(c);
       return shape(c);
     }},
    {"qwen3-0.6b", [] {
       LlamaConfig c = sizes("qwen3", 1024, 3072, 28, 16, 8, 128, 151936, 40960, 1000000.0f);
       make_qwen3(c);
       return shape(c);
     }},
    {"gemma3-1b", [] {
       LlamaConfig c = sizes("gemma3", 1152, 6912, 26, 4, 1, 256, 262144, 32768, 1000000.0f);
       make_gemma3(c, 512);
       return shape(c);
     }},
    {"phi3-mini", [] {
       LlamaConfig c = sizes("phi3", 3072, 8192, 32, 32, 32, 0, 32064, 4096, 10000.0f);
       c.tied_output = false;
       return shape(c);
     }},
    {"smollm2-135m", [] { return shape(sizes("llama", 576, 1536, 30, 9, 3, 0, 49152, 8192, 100000.0f)); }},
};

template <size_t N>
std::string names(const NamedShape (&table)[N]) {
  std::string out;
  for (const NamedShape& s : table) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

template <size_t N>
ModelShape find(const NamedShape (&table)[N], std::string_view name, const char* what) {
  for (const NamedShape& s : table)
    if (s.name == name) return s.make();
  throw std::invalid_argument("unknown " + std::string(what) + " '" + std::string(name) + "' (known: " + names(table) + ")");
}

}  // namespace

ModelShape tiny_arch_shape(std::string_view arch) { return find(kTiny, arch, "architecture"); }
std::string known_tiny_archs() { return names(kTiny); }
ModelShape named_shape(std::string_view name) { return find(kReal, name, "shape"); }
std::string known_shapes() { return names(kReal); }

}  // namespace parley
