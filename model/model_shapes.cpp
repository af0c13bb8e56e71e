#include "model/model_shapes.hpp"

#include <cmath>
#include <stdexcept>

#include "model/random_model.hpp"

namespace parley {
namespace {

struct Sizes {
  const char* arch;
  int dim, hidden, layers, heads, kv_heads, head_size, vocab, context;
  float theta;
};

LlamaConfig config_of(const Sizes& z) {
  LlamaConfig c;
  c.arch = z.arch;
  c.dim = z.dim, c.hidden_dim = z.hidden, c.n_layers = z.layers, c.n_heads = z.heads, c.n_kv_heads = z.kv_heads;
  c.head_size = z.head_size, c.vocab_size = z.vocab, c.max_seq_len = z.context, c.rope_theta = z.theta;
  c.rope_layout = c.arch == "llama" ? RopeLayout::Adjacent : RopeLayout::NeoX;
  c.tied_output = true;
  c.norm_eps = c.arch == "llama" ? 1e-5f : 1e-6f;
  return c;
}

void plain(LlamaConfig&) {}
void untied(LlamaConfig& c) { c.tied_output = false; }
void qwen2(LlamaConfig& c) { c.qkv_bias = true; }
void qwen3(LlamaConfig& c) { c.qk_norm = true; }
void gemma(LlamaConfig& c, int window, int period) {
  c.activation = FfnActivation::GeluTanh;
  c.post_norms = true;
  c.scale_embeddings = true;
  c.sliding_window = window;
  c.sliding_window_period = period;
  c.query_scale = 1.0f / std::sqrt(float(c.head_dim()));
}
void gemma3(LlamaConfig& c, int window) {
  gemma(c, window, 6);
  c.qk_norm = true;
  c.local_rope = {10000.0f, 1.0f};
}

void experts(LlamaConfig& c, int n, int used, int width, bool normalize) {
  c.moe.n_experts = n;
  c.moe.n_used = used;
  c.moe.expert_hidden = width;
  c.moe.normalize = normalize;
}
void qwen3moe(LlamaConfig& c, int n, int used, int width) {
  c.qk_norm = true;
  experts(c, n, used, width, true);
}

void gpt_oss(LlamaConfig& c, int window, float yarn_factor, int original_context, int n_experts = 8, int used = 2,
             int width = 32) {
  c.tied_output = false;  // llama.cpp requires gpt-oss's output.weight
  c.activation = FfnActivation::SwigluOai;
  c.qkv_bias = c.attn_out_bias = c.attn_sinks = true;
  c.sliding_window = window;
  c.sliding_window_period = 2;
  c.rope_yarn = true;
  c.rope_freq_scale = 1.0f / yarn_factor;
  c.rope_original_context = original_context;
  c.local_rope = {c.rope_theta, c.rope_freq_scale};
  experts(c, n_experts, used, width, false);
  c.moe.gating = ExpertGating::SoftmaxSelected;
  c.moe.expert_biases = true;
}

// BERT-family encoders: LayerNorm's epsilon 1e-12, two token types, bidirectional (the writer's keys).
void bert(LlamaConfig& c) {
  c.encoder = c.learned_positions = c.ffn_bias = c.qkv_bias = c.attn_out_bias = true;
  c.activation = FfnActivation::Gelu;
  c.norm_eps = 1e-12f;
}
void nomic_bert(LlamaConfig& c) {
  c.encoder = true;
  c.norm_eps = 1e-12f;
}

struct NamedShape {
  std::string_view name;
  Sizes sizes;
  void (*features)(LlamaConfig&);
  bool rope_factors = false;
};

// Tiny: dim 64, vocab 512, context 512; each row turns on what its architecture has.
constexpr NamedShape kTiny[] = {
    {"llama", {"llama", 64, 160, 3, 4, 2, 32, 512, 512, 500000.0f}, untied, true},
    {"qwen2", {"qwen2", 64, 160, 3, 4, 2, 0, 512, 512, 1000000.0f}, qwen2},
    {"qwen3", {"qwen3", 64, 160, 3, 4, 2, 32, 512, 512, 1000000.0f}, qwen3},
    {"gemma2",
     {"gemma2", 64, 160, 4, 4, 2, 32, 512, 512, 10000.0f},
     [](LlamaConfig& c) {
       gemma(c, 12, 2);
       c.attn_softcap = 1.0f;  // caps small enough that random weights' scores reach them
       c.final_softcap = 2.0f;
       c.local_rope = {c.rope_theta, c.rope_freq_scale};
     }},
    {"gemma3",
     {"gemma3", 64, 160, 6, 4, 1, 32, 512, 512, 1000000.0f},
     [](LlamaConfig& c) {
       c.rope_freq_scale = 1.0f / 8.0f;
       gemma3(c, 8);
     }},
    {"phi3",
     {"phi3", 64, 160, 3, 4, 2, 0, 512, 512, 10000.0f},
     [](LlamaConfig& c) {
       c.tied_output = false;
       c.rope_dims = 12;  // of 16: partial rotary, as Phi-4-mini
       c.rope_original_context = 32;
       c.rope_attn_factor = std::sqrt(1.0f + std::log(512.0f / 32.0f) / std::log(32.0f));  // Phi-3's LongRoPE scale
     },
     true},
    // Mixture-of-experts rows: top-k of 8 (Mixtral: of 4, as wide as the dense FFN) over 200-token tests.
    {"qwen3moe",
     {"qwen3moe", 64, 160, 3, 4, 2, 32, 512, 512, 1000000.0f},
     [](LlamaConfig& c) {
       qwen3moe(c, 8, 3, 32);
       c.rope_yarn = true;  // as Qwen3's long-context files: YaRN x4 past an original context of 64
       c.rope_freq_scale = 0.25f;
       c.rope_original_context = 64;
     }},
    {"qwen2moe",
     {"qwen2moe", 64, 160, 3, 4, 2, 0, 512, 512, 1000000.0f},
     [](LlamaConfig& c) {
       c.qkv_bias = true;
       c.tied_output = false;  // llama.cpp requires qwen2moe's output.weight
       experts(c, 8, 2, 32, false);
       c.moe.shared_hidden = 48;
     }},
    // gpt-oss: windows of 12 on every other layer, sinks, biases, YaRN (x4 past an original context of 64).
    {"gpt-oss",
     {"gpt-oss", 64, 160, 4, 4, 2, 32, 512, 512, 150000.0f},
     [](LlamaConfig& c) { gpt_oss(c, 12, 4.0f, 64); }},
    // Encoders: 4 heads without GQA, as BERT has; nomic-bert's RoPE base is 1000.
    {"bert", {"bert", 64, 160, 3, 4, 4, 0, 512, 512, 10000.0f}, bert},
    {"nomic-bert", {"nomic-bert", 64, 160, 3, 4, 4, 0, 512, 512, 1000.0f}, nomic_bert},
    {"mixtral",
     {"llama", 64, 96, 3, 4, 2, 0, 512, 512, 1000000.0f},
     [](LlamaConfig& c) {
       c.tied_output = false;
       experts(c, 4, 2, 96, true);
     }},
};

// The originals' sizes, heads, head size, context and RoPE base (builtin and 110m: random_model.hpp).
constexpr NamedShape kReal[] = {
    {"llama3.2-1b", {"llama", 2048, 8192, 16, 32, 8, 0, 128256, 131072, 500000.0f}, plain, true},
    {"qwen2.5-0.5b", {"qwen2", 896, 4864, 24, 14, 2, 0, 151936, 32768, 1000000.0f}, qwen2},
    {"qwen3-0.6b", {"qwen3", 1024, 3072, 28, 16, 8, 128, 151936, 40960, 1000000.0f}, qwen3},
    {"gemma3-1b",
     {"gemma3", 1152, 6912, 26, 4, 1, 256, 262144, 32768, 1000000.0f},
     [](LlamaConfig& c) { gemma3(c, 512); }},
    {"phi3-mini", {"phi3", 3072, 8192, 32, 32, 32, 0, 32064, 4096, 10000.0f}, untied},
    {"smollm2-135m", {"llama", 576, 1536, 30, 9, 3, 0, 49152, 8192, 100000.0f}, plain},
    // BGE-base-en-v1.5 (bert, WordPiece 30522, CLS pooling) and nomic-embed-text-v1.5 (nomic-bert, mean pooling).
    {"bge-base", {"bert", 768, 3072, 12, 12, 12, 0, 30522, 512, 10000.0f}, bert},
    {"nomic-embed-v1.5", {"nomic-bert", 768, 3072, 12, 12, 12, 0, 30522, 2048, 1000.0f}, nomic_bert},
    // Qwen3-30B-A3B (and Qwen3-Coder-30B-A3B): 128 experts 768 wide, top 8 renormalized; its own output head.
    {"qwen3-30b-a3b",
     {"qwen3moe", 2048, 6144, 48, 32, 4, 128, 151936, 40960, 1000000.0f},
     [](LlamaConfig& c) {
       qwen3moe(c, 128, 8, 768);
       c.tied_output = false;
     }},
    // gpt-oss-20b: 32 experts 2880 wide, top 4; windows of 128 on every other layer; YaRN x32 past 4096.
    {"gpt-oss-20b",
     {"gpt-oss", 2880, 2880, 24, 64, 8, 64, 201088, 131072, 150000.0f},
     [](LlamaConfig& c) { gpt_oss(c, 128, 32.0f, 4096, 32, 4, 2880); }},
    // Not a real model: Qwen3-30B-A3B's 128 experts and top 8, narrower and shallower for a quick run.
    {"moe-small",
     {"qwen3moe", 512, 1536, 8, 8, 4, 64, 32000, 4096, 1000000.0f},
     [](LlamaConfig& c) { qwen3moe(c, 128, 8, 256); }},
    // Not a real model: tiny-256's rule for experts (the quantization tests' MoE shape).
    {"moe-256",
     {"qwen3moe", 256, 768, 4, 4, 2, 64, 1024, 512, 1000000.0f},
     [](LlamaConfig& c) { qwen3moe(c, 8, 2, 256); }},
    // Not a real model: every row a multiple of 256, so each K-quant applies (the quantization tests' shape).
    {"tiny-256", {"llama", 256, 768, 4, 4, 2, 0, 1024, 512, 10000.0f}, untied},
};

template <size_t N>
std::string names(const NamedShape (&table)[N]) {
  std::string out;
  for (const NamedShape& s : table) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

template <size_t N>
ModelShape find(const NamedShape (&table)[N], std::string_view name, const char* what, const std::string& known) {
  for (const NamedShape& s : table)
    if (s.name == name) {
      LlamaConfig c = config_of(s.sizes);
      s.features(c);
      return {c, s.rope_factors};
    }
  throw std::invalid_argument("unknown " + std::string(what) + " '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace

ModelShape tiny_arch_shape(std::string_view arch) { return find(kTiny, arch, "architecture", known_tiny_archs()); }
std::string known_tiny_archs() { return names(kTiny); }
ModelShape named_shape(std::string_view name) {
  if (name == "builtin") return {builtin_model_config()};
  if (name == "110m") return {bench_110m_config()};
  return find(kReal, name, "shape", known_shapes());
}
std::string known_shapes() { return "builtin, 110m, " + names(kReal); }

}  // namespace parley
