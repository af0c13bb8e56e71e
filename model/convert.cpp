#include "model/convert.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "model/architecture.hpp"
#include "model/gguf_tensor_plan.hpp"
#include "model/gguf_vocab.hpp"
#include "model/gguf_writer.hpp"
#include "model/llama2c.hpp"
#include "model/model_source.hpp"
#include "model/quantize_recipe.hpp"
#include "model/tokenizer.hpp"

namespace parley {

namespace {

// Each tensor in the recipe's type: a quantized source is decoded to F32 and encoded again, as llama.cpp
// requantizes, except that a source already in the chosen type is copied byte for byte (as llama.cpp does).
// Tensors are declared first and built, encoded and written one at a time, so the file is never held whole.
void write_tensors(GgufWriter& g, const std::string& path, const std::vector<PlannedTensor>& plan, FileType type,
                   const RecipeModel& model, const TensorObserver& observe, const TensorDraw& draw) {
  std::vector<GgmlType> chosen;
  for (const PlannedTensor& t : plan) {
    chosen.push_back(recipe_tensor_type(type, model, {t.name, t.ne, block_index(t.name)}));
    g.declare_tensor(t.name, t.ne, chosen.back());
  }
  g.write(path, [&](size_t i) {
    const PlannedTensor& t = plan[i];
    WeightMatrix built;
    const WeightMatrix& data = draw       ? (built = draw(t.name, t.ne, chosen[i]))
                               : t.matrix ? *t.matrix
                                          : (built = t.build());
    uint64_t n = 1;
    for (uint64_t d : t.ne) n *= d;
    if (data.size() != n)
      throw std::invalid_argument("write_model_gguf: tensor '" + t.name + "' has " + std::to_string(data.size()) +
                                  " values, its shape needs " + std::to_string(n));
    const bool copied = !data.is_f32() && data.type() == chosen[i];
    std::vector<uint8_t> bytes = copied          ? data.blocks()
                                 : data.is_f32() ? encode_tensor(t.name, t.ne, chosen[i], data.data())
                                                 : encode_tensor(t.name, t.ne, chosen[i], data.to_f32().data());
    if (observe) observe({i, plan.size(), t.name, t.ne, data.type(), chosen[i], copied});
    return bytes;
  });
}

// The experts' keys; routing that differs from the architecture's own is written out (llama.cpp's loaders read
// those keys only for the architectures that vary them).
void set_expert_keys(GgufWriter& g, const LlamaConfig& c, const ArchSpec& arch) {
  const MoeConfig& m = c.moe;
  const std::string p = c.arch + ".";
  if (arch.moe.experts == MoeSpec::Experts::None)
    throw std::invalid_argument("write_model_gguf: " + c.arch + " files have no experts");
  if ((m.shared_hidden > 0) != arch.moe.shared_expert)
    throw std::invalid_argument("write_model_gguf: " + c.arch + " files fix whether a shared expert exists");
  if (arch.moe.width_is_dense && m.expert_hidden != c.hidden_dim)
    throw std::invalid_argument("write_model_gguf: " + c.arch + " experts are feed_forward_length wide");
  g.set_u32(p + "expert_count", uint32_t(m.n_experts));
  g.set_u32(p + "expert_used_count", uint32_t(m.n_used));
  if (!arch.moe.width_is_dense) g.set_u32(p + "expert_feed_forward_length", uint32_t(m.expert_hidden));
  if (m.shared_hidden > 0) g.set_u32(p + "expert_shared_feed_forward_length", uint32_t(m.shared_hidden));
  if (m.gating != arch.moe.gating) g.set_u32(p + "expert_gating_func", m.gating == ExpertGating::Softmax ? 1u : 3u);
  if (m.normalize != arch.moe.normalize) g.set_bool(p + "expert_weights_norm", m.normalize);
  if (m.weights_scale != 1.0f) g.set_f32(p + "expert_weights_scale", m.weights_scale);
}

// The keys of the config's architecture, as llama.cpp reads them back (model/architecture.cpp).
void set_arch_keys(GgufWriter& g, const LlamaConfig& c, const ArchSpec& arch, bool has_mtp) {
  auto fail = [&](const std::string& what) { throw std::invalid_argument("write_model_gguf: " + c.arch + " " + what); };
  if (c.moe.enabled() && c.moe.expert_biases != arch.moe.biases) fail("files fix whether the experts have biases");
  if (c.qk_norm != arch.qk_norm || c.post_norms != arch.post_norms || c.scale_embeddings != arch.scale_embeddings ||
      c.activation != arch.activation)
    fail("files fix QK-norm, post-norms, embedding scale and activation; the config differs");
  const float rule_scale = c.n_layers == arch.big_model_layers ? 1.0f / std::sqrt(float(c.dim / c.n_heads))
                                                               : 1.0f / std::sqrt(float(c.head_dim()));
  if (c.query_scale != 0.0f && c.query_scale != rule_scale) fail("files cannot carry this query scale");
  if ((arch.attn_softcap > 0) != (c.attn_softcap > 0)) fail("files cannot turn attention soft-capping on or off");
  const std::string p = c.arch + ".";
  g.set_u32(p + "vocab_size", c.vocab_size);
  g.set_u32(p + "context_length", c.max_seq_len);
  g.set_u32(p + "embedding_length", c.dim);
  g.set_u32(p + "block_count", c.n_layers + (has_mtp ? 1 : 0));
  if (has_mtp) g.set_u32(p + "nextn_predict_layers", 1);
  g.set_u32(p + "feed_forward_length", c.hidden_dim);
  g.set_u32(p + "rope.dimension_count", c.rotary_dims());
  g.set_f32(p + "rope.freq_base", c.rope_theta);
  g.set_u32(p + "attention.head_count", c.n_heads);
  g.set_u32(p + "attention.head_count_kv", c.n_kv_heads);
  if (c.head_size > 0) {
    g.set_u32(p + "attention.key_length", c.head_size);
    g.set_u32(p + "attention.value_length", c.head_size);
  }
  if (c.encoder != (arch.encoder != EncoderKind::None) ||
      c.learned_positions != (arch.encoder == EncoderKind::LearnedPositions))
    fail("files fix whether the model is an encoder and where its positions come from");
  if (c.encoder) {
    g.set_f32(p + "attention.layer_norm_epsilon", c.norm_eps);
    g.set_bool(p + "attention.causal", false);
    g.set_u32("tokenizer.ggml.token_type_count", 2);  // llama.cpp refuses an encoder without it
  } else {
    g.set_f32(p + "attention.layer_norm_rms_epsilon", c.norm_eps);
  }
  if (c.rope_freq_scale != 1.0f || c.rope_yarn) {
    g.set_string(p + "rope.scaling.type", c.rope_yarn ? "yarn" : "linear");
    g.set_f32(p + "rope.scaling.factor", 1.0f / c.rope_freq_scale);
  }
  if (c.rope_yarn && (c.yarn_beta_fast != 32.0f || c.yarn_beta_slow != 1.0f))
    fail("files cannot carry YaRN's beta_fast and beta_slow (llama.cpp reads neither)");
  if (c.attn_sinks != arch.attn_sinks) fail("files fix whether attention has sinks");
  if (c.rope_attn_factor != 1.0f) g.set_f32(p + "rope.scaling.attn_factor", c.rope_attn_factor);
  if (c.rope_original_context > 0 && c.rope_original_context != c.max_seq_len)
    g.set_u32(p + "rope.scaling.original_context_length", c.rope_original_context);
  if (c.sliding_window > 0) {
    if (arch.windows == SlidingWindows::None || arch.windows == SlidingWindows::Ignored)
      fail("files have no sliding-window layers");
    g.set_u32(p + "attention.sliding_window", c.sliding_window);
    g.set_u32(p + "attention.sliding_window_pattern", c.sliding_window_period);
    g.set_f32(p + "rope.freq_base_swa", c.local_rope.theta);
    const float local_scale = arch.local_rope_unscaled ? 1.0f : c.rope_freq_scale;
    if (c.local_rope.freq_scale != local_scale) fail("files fix the sliding layers' RoPE scaling");
  } else if (arch.windows == SlidingWindows::Default) {
    fail("files always have sliding-window layers");
  }
  if (c.moe.enabled()) set_expert_keys(g, c, arch);
  if (c.pooling != PoolingType::None) g.set_u32(p + "pooling_type", uint32_t(c.pooling));
  if (!c.classifier_labels.empty()) g.set(p + "classifier.output_labels", GgufValue::strings(c.classifier_labels));
  if (c.attn_softcap > 0) g.set_f32(p + "attn_logit_softcapping", c.attn_softcap);
  if (c.final_softcap > 0)
    g.set_f32(p + "final_logit_softcapping", c.final_softcap);
  else if (arch.final_softcap > 0)
    fail("files always cap the final logits");
}

// The model's tensors in llama.cpp's layout, in the recipe's types; draw, when set, gives every tensor's values.
void write_gguf(const ModelFile& m, const std::string& path, FileType type, const TensorObserver& observe,
                const TensorDraw& draw) {
  const LlamaConfig& c = m.config;
  c.validate();
  const LlamaWeights& w = m.weights;
  if (w.layers.size() != static_cast<size_t>(c.n_layers))
    throw std::invalid_argument("write_model_gguf: " + std::to_string(w.layers.size()) + " layers for n_layers " +
                                std::to_string(c.n_layers));
  const ArchSpec* arch = find_arch(c.arch);
  if (!arch) throw std::invalid_argument("write_model_gguf: unknown architecture '" + c.arch + "'");

  GgufWriter g;
  g.set_string("general.architecture", c.arch);
  g.set_string("general.name", m.name);
  g.set_u32("general.file_type", static_cast<uint32_t>(type));
  if (is_quantized(type)) g.set_u32("general.quantization_version", 2);  // GGML_QNT_VERSION, as llama.cpp writes
  g.set_u32("general.alignment", static_cast<uint32_t>(kGgufDefaultAlignment));
  set_arch_keys(g, c, *arch, w.mtp.has_value());

  if (m.vocab) write_gguf_vocab(g, *m.vocab);
  if (m.vocab && !m.chat_template.empty()) g.set_string("tokenizer.chat_template", m.chat_template);

  // First the tensors in llama.cpp's layout, then each is encoded in the type the recipe picks.
  const std::vector<PlannedTensor> plan = plan_llama_cpp_tensors(c, *arch, w, bool(draw));
  write_tensors(g, path, plan, type, recipe_model(c, w.mtp.has_value()), observe, draw);
}

}  // namespace

void write_model_gguf(const ModelFile& m, const std::string& path, FileType type, const TensorObserver& observe) {
  write_gguf(m, path, type, observe, {});
}

void write_drawn_gguf(const ModelFile& m, const std::string& path, FileType type, const TensorDraw& draw,
                      const TensorObserver& observe) {
  if (!draw) throw std::invalid_argument("write_drawn_gguf: no draw function");
  write_gguf(m, path, type, observe, draw);
}

void write_model_gguf(const ModelFile& m, const std::string& path, GgmlType dtype) {
  write_model_gguf(m, path, file_type_of(dtype));
}

FileType file_type_of(GgmlType dtype) {
  switch (dtype) {
    case GgmlType::F32:
      return FileType::F32;
    case GgmlType::F16:
      return FileType::F16;
    case GgmlType::BF16:
      return FileType::BF16;
    case GgmlType::Q8_0:
      return FileType::Q8_0;
    default:
      break;
  }
  throw std::invalid_argument(std::string("write_model_gguf: unsupported dtype ") + quant::traits(dtype).name +
                              " (a file type names a mix of types: " + file_type_names() + ")");
}

void quantize_model(const std::string& in, const std::string& tokenizer, const std::string& out, FileType type,
                    const TensorObserver& observe) {
  write_model_gguf(load_model_with_vocab(in, tokenizer), out, type, observe);
}

void convert_llama2c(const std::string& checkpoint, const std::string& tokenizer_bin, const std::string& out,
                     FileType type, const TensorObserver& observe) {
  ModelFile m = read_llama2c_checkpoint(checkpoint);
  m.vocab = read_llama2c_tokenizer(tokenizer_bin, m.config.vocab_size);
  write_model_gguf(m, out, type, observe);
}

}  // namespace parley
