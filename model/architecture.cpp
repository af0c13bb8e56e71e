#include "model/architecture.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

#include "model/gguf.hpp"

namespace parley {
namespace {

using FA = FfnActivation;
using SW = SlidingWindows;
// name, rope, activation, qk_norm, post_norms, scale_embeddings, attn_softcap, final_softcap, windows,
// default_window, default_period, local_rope_unscaled, big_model_layers, longrope_factors, moe, attn_sinks,
// ffn_norm, encoder
using Experts = MoeSpec::Experts;
constexpr MoeSpec kMixtral{Experts::Optional, ExpertGating::Softmax, true, false, true};
constexpr MoeSpec kQwen3Moe{Experts::Required, ExpertGating::Softmax, true, false, false};
constexpr MoeSpec kQwen2Moe{Experts::Required, ExpertGating::Softmax, false, true, false};
constexpr MoeSpec kNoExperts{};
constexpr MoeSpec kGptOss{Experts::Required, ExpertGating::SoftmaxSelected, false, false, false, true};
constexpr ArchSpec kArchs[] = {
    // Llama 2/3.x, Mistral, SmolLM: converters store Q/K permuted for the adjacent-pair rope. Mixtral: experts.
    {"llama", RopeLayout::Adjacent, FA::Silu, false, false, false, 0, 0, SW::None, 0, 0, false, 0, true, kMixtral},
    {"qwen2", RopeLayout::NeoX, FA::Silu, false, false, false, 0, 0, SW::None, 0, 0, false, 0, false},
    {"qwen3", RopeLayout::NeoX, FA::Silu, true, false, false, 0, 0, SW::None, 0, 0, false, 0, false},
    {"gemma2", RopeLayout::NeoX, FA::GeluTanh, false, true, true, 50.0f, 30.0f, SW::Default, 4096, 2, false, 46, false},
    {"gemma3", RopeLayout::NeoX, FA::GeluTanh, true, true, true, 0, 0, SW::IfKey, 0, 6, true, 62, false},
    {"phi3", RopeLayout::NeoX, FA::Silu, false, false, false, 0, 0, SW::Ignored, 0, 0, false, 0, true},
    {"qwen2moe", RopeLayout::NeoX, FA::Silu, false, false, false, 0, 0, SW::None, 0, 0, false, 0, false, kQwen2Moe},
    {"qwen3moe", RopeLayout::NeoX, FA::Silu, true, false, false, 0, 0, SW::None, 0, 0, false, 0, false, kQwen3Moe},
    // gpt-oss: windows of 128 on every other layer, biases, sinks; its FFN norm is named post_attention_norm.
    {"gpt-oss", RopeLayout::NeoX, FA::SwigluOai, false, false, false, 0, 0, SW::Default, 128, 2, false, 0, false,
     kGptOss, true, "post_attention_norm"},
    // Encoders (BGE, all-MiniLM, E5; nomic-embed-text): bidirectional, post-LayerNorm, token types.
    {"bert", RopeLayout::NeoX, FA::Gelu, false, false, false, 0, 0, SW::None, 0, 0, false, 0, false, kNoExperts, false,
     "ffn_norm", EncoderKind::LearnedPositions},
    {"nomic-bert", RopeLayout::NeoX, FA::Silu, false, false, false, 0, 0, SW::None, 0, 0, false, 0, false, kNoExperts,
     false, "ffn_norm", EncoderKind::Rotary},
};

int get_size(const GgufFile& f, const std::string& key) {
  int64_t v = f.get_int(key);
  if (v <= 0 || v > INT_MAX) f.fail("key '" + key + "' = " + std::to_string(v) + " is out of range");
  return static_cast<int>(v);
}

float get_positive(const GgufFile& f, const std::string& key, double fallback) {
  const double v = f.get_float(key, fallback);
  if (!(v > 0) || !std::isfinite(v)) f.fail("key '" + key + "' = " + std::to_string(v) + " must be positive");
  return static_cast<float>(v);
}

// RoPE scaling: linear scales positions; LongRoPE's factors are tensors; YaRN scales them by a ramp over dimensions.
void read_rope_scaling(const GgufFile& f, const std::string& p, const ArchSpec& arch, LlamaConfig& c) {
  const std::string type = f.has(p + "rope.scaling.type") ? f.get_string(p + "rope.scaling.type") : "linear";
  c.rope_original_context = c.max_seq_len;
  if (f.has(p + "rope.scaling.original_context_length"))
    c.rope_original_context = get_size(f, p + "rope.scaling.original_context_length");
  c.rope_attn_factor = get_positive(f, p + "rope.scaling.attn_factor", 1.0);
  if (type == "none") return;
  if (type == "linear" || type == "yarn") {
    const double factor = f.has(p + "rope.scaling.factor") ? f.get_float(p + "rope.scaling.factor") : 0.0;
    if (factor < 0 || !std::isfinite(factor)) f.fail("key '" + p + "rope.scaling.factor' must be positive");
    if (factor > 0) c.rope_freq_scale = static_cast<float>(1.0 / factor);
    c.rope_yarn = type == "yarn";  // llama.cpp's defaults: ext_factor 1, beta_fast 32, beta_slow 1 (keys not read)
  } else if (type == "longrope") {
    if (!arch.longrope_factors) f.fail("RoPE scaling 'longrope' is not defined for " + c.arch);
  } else {
    f.fail("RoPE scaling '" + type + "' (key '" + p +
           "rope.scaling.type') is not supported (supported: none, linear, yarn, longrope)");
  }
}

void read_sliding_windows(const GgufFile& f, const std::string& p, const ArchSpec& arch, LlamaConfig& c) {
  const std::string key = p + "attention.sliding_window";
  if (arch.windows == SW::None || arch.windows == SW::Ignored) return;
  if (arch.windows == SW::IfKey && !f.has(key)) return;
  c.sliding_window = f.has(key) ? get_size(f, key) : arch.default_window;
  c.sliding_window_period = f.has(p + "attention.sliding_window_pattern")
                                ? get_size(f, p + "attention.sliding_window_pattern")
                                : arch.default_period;
  c.local_rope = {c.rope_theta, c.rope_freq_scale};
  if (arch.local_rope_unscaled) c.local_rope = {10000.0f, 1.0f};
  if (f.has(p + "rope.freq_base_swa")) c.local_rope.theta = get_positive(f, p + "rope.freq_base_swa", 10000.0);
}

// The experts' count, width and routing: the row's defaults, which the file's expert_* keys override.
void read_experts(const GgufFile& f, const std::string& p, const ArchSpec& arch, LlamaConfig& c) {
  const int64_t n = f.get_int(p + "expert_count", 0);
  if (n == 0) {
    if (arch.moe.experts == Experts::Required) f.fail("key '" + p + "expert_count' is required for " + c.arch);
    return;
  }
  if (arch.moe.experts == Experts::None) f.fail("key '" + p + "expert_count': " + c.arch + " has no experts");
  if (n < 0 || n > 1024) f.fail("key '" + p + "expert_count' = " + std::to_string(n) + " is out of range");
  MoeConfig& m = c.moe;
  m.n_experts = int(n);
  m.n_used = get_size(f, p + "expert_used_count");
  if (m.n_used > m.n_experts)
    f.fail("key '" + p + "expert_used_count' = " + std::to_string(m.n_used) +
           " is more than expert_count = " + std::to_string(m.n_experts));
  if (arch.moe.width_is_dense)
    m.expert_hidden = c.hidden_dim;
  else
    m.expert_hidden = f.has(p + "expert_feed_forward_length") ? get_size(f, p + "expert_feed_forward_length")
                                                              : std::max(1, c.hidden_dim / m.n_used);
  if (arch.moe.shared_expert)
    m.shared_hidden = f.has(p + "expert_shared_feed_forward_length")
                          ? get_size(f, p + "expert_shared_feed_forward_length")
                          : c.hidden_dim;
  m.gating = arch.moe.gating;
  m.expert_biases = arch.moe.biases;
  if (f.has(p + "expert_gating_func")) {  // llama.cpp's llama_expert_gating_func_type
    const int64_t g = f.get_int(p + "expert_gating_func");
    if (g == 1)
      m.gating = ExpertGating::Softmax;
    else if (g == 3)
      m.gating = ExpertGating::SoftmaxSelected;
    else
      f.fail("key '" + p + "expert_gating_func' = " + std::to_string(g) +
             " is a gating function Parley does not run (1: softmax, 3: softmax over the selected experts)");
  }
  m.normalize = f.get_bool(p + "expert_weights_norm", arch.moe.normalize);
  const double scale = f.get_float(p + "expert_weights_scale", 0.0);  // llama.cpp: 0 means unscaled
  if (!std::isfinite(scale) || scale < 0) f.fail("key '" + p + "expert_weights_scale' must not be negative");
  m.weights_scale = scale == 0.0 ? 1.0f : float(scale);
}

// An encoder's keys: LayerNorm's epsilon, attention that must not be causal, biases on the FFN.
void read_encoder(const GgufFile& f, const std::string& p, const ArchSpec& arch, LlamaConfig& c) {
  if (arch.encoder == EncoderKind::None) return;
  c.encoder = true;
  c.learned_positions = arch.encoder == EncoderKind::LearnedPositions;
  c.norm_eps = get_positive(f, p + "attention.layer_norm_epsilon", 1e-12);
  if (f.get_bool(p + "attention.causal", false))
    f.fail("key '" + p + "attention.causal' is true: Parley runs " + c.arch + " bidirectional only");
  c.ffn_bias = f.find_tensor("blk.0.ffn_up.bias") != nullptr;
}

}  // namespace

cpu::RopeSpec rope_spec(const LlamaConfig& c, const RopeConfig& rope, const float* freq_factors) {
  cpu::RopeSpec spec{rope.theta, c.rope_layout, c.rope_dims, rope.freq_scale, c.rope_attn_factor, freq_factors};
  if (!c.rope_yarn) return spec;
  // llama.cpp's YaRN: ext_factor 1, the ramp between the pairs beta_fast and beta_slow turn at in the original
  // context, and cos and sin times 1 + 0.1 ln(factor) when it stretches positions.
  const int rot = c.rotary_dims();
  auto corr = [&](float turns) {
    return float(rot) * std::log(float(c.rope_original_context) / (turns * 2.0f * float(M_PI))) /
           (2.0f * std::log(rope.theta));
  };
  spec.ext_factor = 1.0f;
  spec.yarn_low = std::max(0.0f, std::floor(corr(c.yarn_beta_fast)));
  spec.yarn_high = std::min(float(rot - 1), std::ceil(corr(c.yarn_beta_slow)));
  const float factor = 1.0f / rope.freq_scale;
  if (factor > 1.0f) spec.attn_factor *= 1.0f + 0.1f * std::log(factor);
  return spec;
}

const ArchSpec* find_arch(std::string_view name) {
  for (const auto& a : kArchs)
    if (a.name == name) return &a;
  return nullptr;
}

std::string known_archs() {
  std::string s;
  for (const auto& a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

int64_t LlamaConfig::parameter_count(bool active_only) const {
  const int64_t d = dim, attention = d * (q_dim() + 2 * kv_dim()) + int64_t(q_dim()) * d;
  const int64_t ffn = moe.enabled() ? moe.ffn_elements(d, active_only) : 3 * d * hidden_dim;
  const int64_t embedding = int64_t(vocab_size) * d * (tied_output ? 1 : 2);
  return embedding + int64_t(n_layers) * (attention + ffn);
}

void LlamaConfig::validate() const {
  auto positive = [](const char* field, long long v) {
    if (v <= 0)
      throw std::invalid_argument(std::string("LlamaConfig: ") + field + " must be positive (got " + std::to_string(v) +
                                  ")");
  };
  positive("dim", dim);
  positive("hidden_dim", hidden_dim);
  positive("n_layers", n_layers);
  positive("n_heads", n_heads);
  positive("n_kv_heads", n_kv_heads);
  positive("vocab_size", vocab_size);
  positive("max_seq_len", max_seq_len);
  if (head_size < 0) throw std::invalid_argument("LlamaConfig: head_size must not be negative");
  if (head_size == 0 && dim % n_heads != 0)
    throw std::invalid_argument("LlamaConfig: dim (" + std::to_string(dim) + ") is not a multiple of n_heads (" +
                                std::to_string(n_heads) + ")");
  if (n_heads % n_kv_heads != 0)
    throw std::invalid_argument("LlamaConfig: n_heads (" + std::to_string(n_heads) +
                                ") is not a multiple of n_kv_heads (" + std::to_string(n_kv_heads) + ")");
  if (head_dim() % 2 != 0)
    throw std::invalid_argument("LlamaConfig: head_dim (" + std::to_string(head_dim()) + ") must be even for RoPE");
  if (rope_dims < 0 || rope_dims > head_dim() || rope_dims % 2 != 0)
    throw std::invalid_argument("LlamaConfig: rope_dims (" + std::to_string(rope_dims) +
                                ") must be even and at most head_dim " + std::to_string(head_dim()));
  for (float theta : {rope_theta, local_rope.theta})
    if (!(theta > 0.0f) || !std::isfinite(theta))
      throw std::invalid_argument("LlamaConfig: rope_theta must be positive and finite");
  for (float x : {rope_freq_scale, local_rope.freq_scale, rope_attn_factor})
    if (!(x > 0.0f) || !std::isfinite(x))
      throw std::invalid_argument("LlamaConfig: RoPE scaling factors must be positive and finite");
  if (!(norm_eps > 0.0f) || !std::isfinite(norm_eps))
    throw std::invalid_argument("LlamaConfig: norm_eps must be positive and finite");
  for (float x : {query_scale, attn_softcap, final_softcap})
    if (!(x >= 0.0f) || !std::isfinite(x))
      throw std::invalid_argument("LlamaConfig: query_scale and softcaps must be finite and not negative");
  if (sliding_window < 0 || sliding_window_period < 0 || (sliding_window > 0 && sliding_window_period == 0))
    throw std::invalid_argument("LlamaConfig: a sliding window needs a positive period");
  if (moe.n_experts < 0 || (moe.enabled() && (moe.n_used < 1 || moe.n_used > moe.n_experts || moe.expert_hidden < 1)))
    throw std::invalid_argument("LlamaConfig: " + std::to_string(moe.n_used) + " of " + std::to_string(moe.n_experts) +
                                " experts of width " + std::to_string(moe.expert_hidden) +
                                " (needs 1 <= used <= count, width > 0)");
  if (moe.shared_hidden < 0 || !(moe.weights_scale > 0.0f) || !std::isfinite(moe.weights_scale))
    throw std::invalid_argument("LlamaConfig: the shared expert's width and the experts' weight scale");
  if (encoder && (moe.enabled() || sliding_window > 0 || post_norms || qk_norm))
    throw std::invalid_argument("LlamaConfig: an encoder has no experts, windows, QK-norm or Gemma's post-norms");
  if (!encoder && learned_positions) throw std::invalid_argument("LlamaConfig: learned positions need an encoder");
  if (ffn_bias && activation != FfnActivation::Gelu)
    throw std::invalid_argument("LlamaConfig: FFN biases are supported on the ungated GELU FFN only");
  if (activation == FfnActivation::Gelu && !encoder)
    throw std::invalid_argument("LlamaConfig: the ungated GELU FFN is an encoder's");
}

LlamaConfig config_from_gguf(const GgufFile& f) {
  LlamaConfig c;
  c.arch = f.get_string("general.architecture");
  const ArchSpec* arch = find_arch(c.arch);
  if (!arch) f.fail("unsupported architecture '" + c.arch + "' (supported: " + known_archs() + ")");
  const std::string p = c.arch + ".";

  c.dim = get_size(f, p + "embedding_length");
  c.hidden_dim = get_size(f, p + "feed_forward_length");
  c.n_layers = get_size(f, p + "block_count");
  // A multi-token-prediction block (llama.cpp's "nextn") follows the main layers and is counted with them.
  const int64_t nextn = f.get_int(p + "nextn_predict_layers", 0);
  if (nextn < 0 || nextn > 1 || nextn >= c.n_layers)
    f.fail("key '" + p + "nextn_predict_layers' is " + std::to_string(nextn) + " (Parley runs at most one MTP block)");
  c.n_layers -= int(nextn);
  c.n_heads = get_size(f, p + "attention.head_count");
  c.n_kv_heads = f.has(p + "attention.head_count_kv") ? get_size(f, p + "attention.head_count_kv") : c.n_heads;
  c.max_seq_len = get_size(f, p + "context_length");
  if (f.has(p + "attention.key_length"))
    c.head_size = get_size(f, p + "attention.key_length");
  else if (c.dim % c.n_heads != 0)
    f.fail("key '" + p + "attention.key_length' is needed: n_embd is not a multiple of n_head");
  const int head = c.head_size > 0 ? c.head_size : c.dim / c.n_heads;
  if (f.has(p + "attention.value_length") && get_size(f, p + "attention.value_length") != head)
    f.fail("key '" + p + "attention.value_length' differs from attention.key_length " + std::to_string(head) +
           " (not supported)");
  if (f.has(p + "rope.dimension_count")) {
    const int rot = get_size(f, p + "rope.dimension_count");
    if (rot > head || rot % 2 != 0)
      f.fail("key '" + p + "rope.dimension_count' = " + std::to_string(rot) +
             " must be even and at most the head size " + std::to_string(head));
    if (rot != head && c.arch == "llama")
      f.fail("key '" + p + "rope.dimension_count' must equal the head size for llama");
    if (rot != head) c.rope_dims = rot;
  }
  c.rope_theta = get_positive(f, p + "rope.freq_base", 10000.0);
  c.norm_eps = get_positive(f, p + "attention.layer_norm_rms_epsilon", 1e-5);
  c.rope_layout = arch->rope;
  c.activation = arch->activation;
  c.qk_norm = arch->qk_norm;
  c.post_norms = arch->post_norms;
  c.scale_embeddings = arch->scale_embeddings;
  c.qkv_bias = f.find_tensor("blk.0.attn_q.bias") || f.find_tensor("blk.0.attn_qkv.bias");
  c.attn_out_bias = f.find_tensor("blk.0.attn_output.bias") != nullptr;
  c.attn_sinks = arch->attn_sinks;
  c.attn_softcap = arch->attn_softcap > 0 ? get_positive(f, p + "attn_logit_softcapping", arch->attn_softcap) : 0.0f;
  c.final_softcap =
      f.has(p + "final_logit_softcapping") ? get_positive(f, p + "final_logit_softcapping", 1.0) : arch->final_softcap;
  // Gemma's 27B sizes scale queries by the model width per head, every other size by the head size.
  c.query_scale = c.n_layers + int(nextn) == arch->big_model_layers ? 1.0f / std::sqrt(float(c.dim / c.n_heads))
                                                                    : 1.0f / std::sqrt(float(head));
  read_rope_scaling(f, p, *arch, c);
  read_sliding_windows(f, p, *arch, c);
  if (f.has(p + "vocab_size"))
    c.vocab_size = get_size(f, p + "vocab_size");
  else if (const auto* t = f.find_tensor("token_embd.weight"); t && t->ne.size() == 2 && t->ne[1] <= INT_MAX)
    c.vocab_size = static_cast<int>(t->ne[1]);
  read_experts(f, p, *arch, c);
  read_encoder(f, p, *arch, c);
  const int64_t pooling = f.get_int(p + "pooling_type", 0);
  if (pooling < 0 || pooling > int64_t(PoolingType::Rank))
    f.fail("key '" + p + "pooling_type' is " + std::to_string(pooling) + " (llama.cpp's are 0 to 4)");
  c.pooling = PoolingType(pooling);
  if (f.has(p + "classifier.output_labels")) c.classifier_labels = f.get_string_array(p + "classifier.output_labels");
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    f.fail(std::string("inconsistent model config: ") + e.what());
  }
  return c;
}

}  // namespace parley
