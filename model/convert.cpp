#include "model/convert.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "model/architecture.hpp"
#include "model/gguf_vocab.hpp"
#include "model/gguf_writer.hpp"
#include "model/llama2c.hpp"
#include "model/model_source.hpp"
#include "model/quantize_recipe.hpp"
#include "model/tokenizer.hpp"

namespace parley {

namespace {

// A tensor to write: a matrix of the model as it is, or one built when it is written (permuted, fused, a
// vector), so that at most one built tensor is held at a time.
struct PlannedTensor {
  std::string name;
  std::vector<uint64_t> ne;
  const WeightMatrix* matrix = nullptr;
  std::function<WeightMatrix()> build;
};

// Rows of several matrices, one after the other. Parts of one quantized type keep their blocks, so that a
// rewrite in that type copies them as llama.cpp would copy the fused tensor.
WeightMatrix concat_rows(const std::vector<const WeightMatrix*>& parts) {
  const WeightMatrix& first = *parts.front();
  const bool same_blocks = !first.is_f32() && std::all_of(parts.begin(), parts.end(), [&](const WeightMatrix* p) {
    return p->type() == first.type() && p->cols() == first.cols();
  });
  if (same_blocks) {
    std::vector<uint8_t> blocks;
    int64_t rows = 0;
    for (const WeightMatrix* p : parts) {
      blocks.insert(blocks.end(), p->blocks().begin(), p->blocks().end());
      rows += p->rows();
    }
    return WeightMatrix::from_blocks(first.type(), rows, first.cols(), std::move(blocks));
  }
  std::vector<float> out;
  for (const WeightMatrix* p : parts) {
    const std::vector<float> values = p->to_f32();
    out.insert(out.end(), values.begin(), values.end());
  }
  return WeightMatrix(std::move(out));
}

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

// NeoX pairs (i, i + d/2) become Adjacent pairs (2i, 2i+1): the same rotation frequencies, and
// as Q and K are permuted alike, every attention score is unchanged.
std::vector<float> neox_to_adjacent(const std::vector<float>& w, int n_heads, int head_dim, int row_len) {
  std::vector<float> out(w.size());
  const size_t half = head_dim / 2, row = row_len;
  for (size_t h = 0; h < static_cast<size_t>(n_heads); ++h)
    for (size_t i = 0; i < half; ++i) {
      const size_t base = h * head_dim;
      std::copy_n(&w[(base + i) * row], row, &out[(base + 2 * i) * row]);
      std::copy_n(&w[(base + half + i) * row], row, &out[(base + 2 * i + 1) * row]);
    }
  return out;
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
  g.set_f32(p + "attention.layer_norm_rms_epsilon", c.norm_eps);
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

  // First the tensors in llama.cpp's llama layout, then each is encoded in the type the recipe picks.
  std::vector<PlannedTensor> plan;
  const uint64_t dim = c.dim, hidden = c.hidden_dim, qd = c.q_dim(), kv = c.kv_dim(), vocab = c.vocab_size,
                 hd = c.head_dim();
  auto add = [&](const std::string& name, const WeightMatrix& data, std::vector<uint64_t> ne) {
    plan.push_back({name, std::move(ne), &data, {}});
  };
  auto add_built = [&](const std::string& name, std::function<WeightMatrix()> build, std::vector<uint64_t> ne) {
    plan.push_back({name, std::move(ne), nullptr, std::move(build)});
  };
  auto add_vector = [&](const std::string& name, const std::vector<float>& v, std::vector<uint64_t> ne) {
    add_built(
        name, [&v] { return WeightMatrix(v); }, std::move(ne));
  };
  // llama.cpp's llama layout wants adjacent-pair RoPE: a NeoX-ordered Llama has its Q/K rows permuted.
  const bool permute = c.rope_layout != arch->rope;
  if (permute && !(c.arch == "llama" && c.rope_layout == RopeLayout::NeoX))
    throw std::invalid_argument("write_model_gguf: " + c.arch + " files have " +
                                (arch->rope == RopeLayout::NeoX ? "NeoX" : "adjacent") + " RoPE");
  const bool fused = c.arch == "phi3";  // Phi-3 files fuse Q/K/V and gate/up
  // Each kind of expert matrix as one 3-D tensor [n_experts][rows][cols], experts in order.
  auto add_expert_tensor = [&](const std::string& name, const std::vector<WeightMatrix>& parts,
                               std::vector<uint64_t> ne) {
    if (!draw && parts.size() != ne[2])
      throw std::invalid_argument("write_model_gguf: " + name + " has " + std::to_string(parts.size()) + " experts");
    add_built(
        name,
        [&parts] {
          std::vector<const WeightMatrix*> all;
          for (const WeightMatrix& p : parts) all.push_back(&p);
          return concat_rows(all);
        },
        std::move(ne));
  };
  auto add_experts = [&](const std::string& b, const ExpertWeights& x) {
    const uint64_t E = uint64_t(c.moe.n_experts), H = uint64_t(c.moe.expert_hidden), S = uint64_t(c.moe.shared_hidden);
    add(b + "ffn_gate_inp.weight", x.router, {dim, E});
    add_expert_tensor(b + "ffn_gate_exps.weight", x.gate, {dim, H, E});
    add_expert_tensor(b + "ffn_down_exps.weight", x.down, {H, dim, E});
    add_expert_tensor(b + "ffn_up_exps.weight", x.up, {dim, H, E});
    if (c.moe.expert_biases) {
      add_vector(b + "ffn_gate_inp.bias", x.router_bias, {E});
      add_vector(b + "ffn_gate_exps.bias", x.gate_bias, {H, E});
      add_vector(b + "ffn_down_exps.bias", x.down_bias, {dim, E});
      add_vector(b + "ffn_up_exps.bias", x.up_bias, {H, E});
    }
    if (S > 0) {
      add_vector(b + "ffn_gate_inp_shexp.weight", x.shared_gate, {dim});
      add(b + "ffn_gate_shexp.weight", x.shared_w_gate, {dim, S});
      add(b + "ffn_down_shexp.weight", x.shared_w_down, {S, dim});
      add(b + "ffn_up_shexp.weight", x.shared_w_up, {dim, S});
    }
  };
  add("token_embd.weight", w.token_embedding, {dim, vocab});
  auto add_layer = [&](int l, const LayerWeights& L) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add_vector(b + "attn_norm.weight", L.attn_norm, {dim});
    if (!draw && (L.wq.size() != qd * dim || L.wk.size() != kv * dim))
      throw std::invalid_argument("write_model_gguf: layer " + std::to_string(l) + " wq/wk have the wrong size");
    if (fused) {
      add_built(b + "attn_qkv.weight", [&L] { return concat_rows({&L.wq, &L.wk, &L.wv}); }, {dim, qd + 2 * kv});
      if (c.qkv_bias) {
        std::vector<float> bias = L.bq;
        bias.insert(bias.end(), L.bk.begin(), L.bk.end());
        bias.insert(bias.end(), L.bv.begin(), L.bv.end());
        add_built(b + "attn_qkv.bias", [bias] { return WeightMatrix(bias); }, {qd + 2 * kv});
      }
    } else {
      if (permute) {
        add_built(b + "attn_q.weight",
                  [&c, &L] { return neox_to_adjacent(L.wq.to_f32(), c.n_heads, c.head_dim(), c.dim); }, {dim, qd});
        add_built(b + "attn_k.weight",
                  [&c, &L] { return neox_to_adjacent(L.wk.to_f32(), c.n_kv_heads, c.head_dim(), c.dim); }, {dim, kv});
      } else {
        add(b + "attn_q.weight", L.wq, {dim, qd});
        add(b + "attn_k.weight", L.wk, {dim, kv});
      }
      add(b + "attn_v.weight", L.wv, {dim, kv});
      if (c.qkv_bias) {
        if (permute) throw std::invalid_argument("write_model_gguf: biases of a NeoX-ordered llama are not permuted");
        add_vector(b + "attn_q.bias", L.bq, {qd});
        add_vector(b + "attn_k.bias", L.bk, {kv});
        add_vector(b + "attn_v.bias", L.bv, {kv});
      }
    }
    if (c.qk_norm) {
      add_vector(b + "attn_q_norm.weight", L.q_norm, {hd});
      add_vector(b + "attn_k_norm.weight", L.k_norm, {hd});
    }
    add(b + "attn_output.weight", L.wo, {qd, dim});
    if (c.attn_out_bias) add_vector(b + "attn_output.bias", L.bo, {dim});
    if (c.attn_sinks) add_vector(b + "attn_sinks.weight", L.attn_sinks, {uint64_t(c.n_heads)});
    add_vector(b + std::string(arch->ffn_norm) + ".weight", L.ffn_norm, {dim});
    if (c.moe.enabled())
      add_experts(b, L.experts);
    else if (fused)
      add_built(b + "ffn_up.weight", [&L] { return concat_rows({&L.w_gate, &L.w_up}); }, {dim, 2 * hidden});
    else
      add(b + "ffn_gate.weight", L.w_gate, {dim, hidden});
    if (!c.moe.enabled()) add(b + "ffn_down.weight", L.w_down, {hidden, dim});  // llama.cpp's order: gate, down, up
    if (!fused && !c.moe.enabled()) add(b + "ffn_up.weight", L.w_up, {dim, hidden});
    if (c.post_norms) {
      add_vector(b + "post_attention_norm.weight", L.post_attn_norm, {dim});
      add_vector(b + "post_ffw_norm.weight", L.post_ffn_norm, {dim});
    }
  };
  for (int l = 0; l < c.n_layers; ++l) add_layer(l, w.layers[size_t(l)]);
  if (w.mtp) {  // llama.cpp's nextn layout: the block after the main layers, plus its projection and norms
    const std::string b = "blk." + std::to_string(c.n_layers) + ".nextn.";
    add_layer(c.n_layers, w.mtp->layer);
    add_vector(b + "enorm.weight", w.mtp->enorm, {dim});
    add_vector(b + "hnorm.weight", w.mtp->hnorm, {dim});
    add(b + "eh_proj.weight", w.mtp->eh_proj, {2 * dim, dim});
    add_vector(b + "shared_head_norm.weight", w.mtp->shared_head_norm, {dim});
  }
  if (!w.rope_freq_factors.empty()) {
    const uint64_t half = uint64_t(c.rotary_dims()) / 2;
    if (arch->longrope_factors && c.arch != "llama") {
      // LongRoPE: the factors given serve beyond the original context; within it, none (all 1).
      if (c.max_seq_len <= c.rope_original_context)
        throw std::invalid_argument("write_model_gguf: LongRoPE factors need a context beyond the original one");
      add_vector("rope_factors_long.weight", w.rope_freq_factors, {half});
      add_built("rope_factors_short.weight", [half] { return WeightMatrix(std::vector<float>(half, 1.0f)); }, {half});
    } else {
      add_vector("rope_freqs.weight", w.rope_freq_factors, {half});
    }
  }
  add_vector("output_norm.weight", w.output_norm, {dim});
  if (!c.tied_output) {
    if (c.arch == "gemma2")
      throw std::invalid_argument("write_model_gguf: gemma2 files tie the output to the embedding");
    add("output.weight", w.output, {dim, vocab});
  } else if (c.arch == "qwen2moe") {
    throw std::invalid_argument("write_model_gguf: qwen2moe files have their own output.weight (llama.cpp needs it)");
  }
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
