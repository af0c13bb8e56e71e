#include "model/gguf_tensor_plan.hpp"

#include <algorithm>
#include <stdexcept>

#include "model/architecture.hpp"

namespace parley {
namespace {

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

void fail(const std::string& why) { throw std::invalid_argument("write_model_gguf: " + why); }

// Plans in llama.cpp's order: the embedding, each layer (attention, then the FFN), the MTP block, the RoPE
// factors, the output.
class Planner {
 public:
  Planner(const LlamaConfig& c, const ArchSpec& arch, bool drawn)
      : c_(c),
        arch_(arch),
        drawn_(drawn),
        permute_(c.rope_layout != arch.rope),
        fused_qkv_(c.arch == "phi3" || c.arch == "nomic-bert"),
        fused_gate_up_(c.arch == "phi3") {
    // llama.cpp's llama layout wants adjacent-pair RoPE: a NeoX-ordered Llama has its Q/K rows permuted.
    if (permute_ && !(c.arch == "llama" && c.rope_layout == RopeLayout::NeoX))
      fail(c.arch + " files have " + (arch.rope == RopeLayout::NeoX ? "NeoX" : "adjacent") + " RoPE");
  }

  std::vector<PlannedTensor> plan(const LlamaWeights& w) {
    add("token_embd.weight", w.token_embedding, {dim(), vocab()});
    if (c_.encoder) add_encoder_embedding(w);
    for (int l = 0; l < c_.n_layers; ++l) add_layer(l, w.layers[size_t(l)]);
    if (w.mtp) add_mtp(*w.mtp);
    if (!w.rope_freq_factors.empty()) add_rope_factors(w.rope_freq_factors);
    if (!c_.encoder) add_vector("output_norm.weight", w.output_norm, {dim()});
    if (!c_.tied_output) {
      if (c_.arch == "gemma2") fail("gemma2 files tie the output to the embedding");
      add("output.weight", w.output, {dim(), vocab()});
    } else if (c_.arch == "qwen2moe") {
      fail("qwen2moe files have their own output.weight (llama.cpp needs it)");
    }
    if (!w.cls_out.empty()) add_classifier(w);
    return std::move(plan_);
  }

 private:
  uint64_t dim() const { return c_.dim; }
  uint64_t vocab() const { return c_.vocab_size; }
  uint64_t qd() const { return uint64_t(c_.q_dim()); }
  uint64_t kv() const { return uint64_t(c_.kv_dim()); }

  void add(const std::string& name, const WeightMatrix& data, std::vector<uint64_t> ne) {
    plan_.push_back({name, std::move(ne), &data, {}});
  }
  void add_built(const std::string& name, std::function<WeightMatrix()> build, std::vector<uint64_t> ne) {
    plan_.push_back({name, std::move(ne), nullptr, std::move(build)});
  }
  void add_vector(const std::string& name, const std::vector<float>& v, std::vector<uint64_t> ne) {
    add_built(
        name, [&v] { return WeightMatrix(v); }, std::move(ne));
  }

  // Token type rows (type 0's, then a second of zeros), absolute positions, the embeddings' LayerNorm.
  void add_encoder_embedding(const LlamaWeights& w) {
    if (!drawn_ && w.token_type.size() != dim()) fail("an encoder needs token type 0's row");
    add_built("token_types.weight",
              [&w] {
                std::vector<float> rows = w.token_type;
                rows.resize(2 * rows.size(), 0.0f);
                return WeightMatrix(std::move(rows));
              },
              {dim(), 2});
    if (c_.learned_positions) add("position_embd.weight", w.position_embedding, {dim(), uint64_t(c_.max_seq_len)});
    add_layer_norm("token_embd_norm", w.embedding_norm);
  }
  void add_layer_norm(const std::string& name, const LayerNormWeights& n) {
    add_vector(name + ".weight", n.weight, {dim()});
    add_vector(name + ".bias", n.bias, {dim()});
  }

  // A reranker's head: a cross-encoder's dense layer, then one row per label (n_cls_out: the labels' count, else 1).
  void add_classifier(const LlamaWeights& w) {
    if (!w.cls.empty()) {
      add("cls.weight", w.cls, {dim(), dim()});
      if (!w.cls_bias.empty()) add_vector("cls.bias", w.cls_bias, {dim()});
    }
    const uint64_t n_out = std::max<uint64_t>(1, c_.classifier_labels.size());
    if (!drawn_ && w.cls_out.size() != n_out * dim()) fail("cls.output.weight has the wrong size");
    add("cls.output.weight", w.cls_out, {dim(), n_out});
    if (!w.cls_out_bias.empty()) add_vector("cls.output.bias", w.cls_out_bias, {n_out});
  }

  void add_layer(int l, const LayerWeights& L) {
    const std::string b = "blk." + std::to_string(l) + ".";
    if (!c_.encoder) add_vector(b + "attn_norm.weight", L.attn_norm, {dim()});
    if (!drawn_ && (L.wq.size() != qd() * dim() || L.wk.size() != kv() * dim()))
      fail("layer " + std::to_string(l) + " wq/wk have the wrong size");
    if (fused_qkv_)
      add_fused_qkv(b, L);
    else
      add_qkv(b, L);
    if (c_.qk_norm) {
      add_vector(b + "attn_q_norm.weight", L.q_norm, {uint64_t(c_.head_dim())});
      add_vector(b + "attn_k_norm.weight", L.k_norm, {uint64_t(c_.head_dim())});
    }
    add(b + "attn_output.weight", L.wo, {qd(), dim()});
    if (c_.attn_out_bias) add_vector(b + "attn_output.bias", L.bo, {dim()});
    if (c_.attn_sinks) add_vector(b + "attn_sinks.weight", L.attn_sinks, {uint64_t(c_.n_heads)});
    if (c_.encoder) {
      add_layer_norm(b + "attn_output_norm", L.attn_out_norm);
      add_layer_norm(b + "layer_output_norm", L.layer_out_norm);
    } else {
      add_vector(b + std::string(arch_.ffn_norm) + ".weight", L.ffn_norm, {dim()});
    }
    add_ffn(b, L);
    if (c_.post_norms) {
      add_vector(b + "post_attention_norm.weight", L.post_attn_norm, {dim()});
      add_vector(b + "post_ffw_norm.weight", L.post_ffn_norm, {dim()});
    }
  }

  // Phi-3 and nomic-bert files fuse Q/K/V (and their biases).
  void add_fused_qkv(const std::string& b, const LayerWeights& L) {
    const uint64_t qd = this->qd(), kv = this->kv();
    add_built(b + "attn_qkv.weight", [&L] { return concat_rows({&L.wq, &L.wk, &L.wv}); }, {dim(), qd + 2 * kv});
    if (!c_.qkv_bias) return;
    std::vector<float> bias = L.bq;
    bias.insert(bias.end(), L.bk.begin(), L.bk.end());
    bias.insert(bias.end(), L.bv.begin(), L.bv.end());
    add_built(b + "attn_qkv.bias", [bias] { return WeightMatrix(bias); }, {qd + 2 * kv});
  }

  void add_qkv(const std::string& b, const LayerWeights& L) {
    const uint64_t qd = this->qd(), kv = this->kv();
    if (permute_) {
      const LlamaConfig& c = c_;
      add_built(b + "attn_q.weight",
                [&c, &L] { return neox_to_adjacent(L.wq.to_f32(), c.n_heads, c.head_dim(), c.dim); }, {dim(), qd});
      add_built(b + "attn_k.weight",
                [&c, &L] { return neox_to_adjacent(L.wk.to_f32(), c.n_kv_heads, c.head_dim(), c.dim); }, {dim(), kv});
    } else {
      add(b + "attn_q.weight", L.wq, {dim(), qd});
      add(b + "attn_k.weight", L.wk, {dim(), kv});
    }
    add(b + "attn_v.weight", L.wv, {dim(), kv});
    if (!c_.qkv_bias) return;
    if (permute_) fail("biases of a NeoX-ordered llama are not permuted");
    add_vector(b + "attn_q.bias", L.bq, {qd});
    add_vector(b + "attn_k.bias", L.bk, {kv});
    add_vector(b + "attn_v.bias", L.bv, {kv});
  }

  // llama.cpp's order: gate, down, up (Phi-3 fuses gate and up into ffn_up; BERT has no gate).
  void add_ffn(const std::string& b, const LayerWeights& L) {
    const uint64_t hidden = c_.hidden_dim;
    if (c_.moe.enabled()) return add_experts(b, L.experts);
    if (c_.activation == FfnActivation::Gelu) {  // BERT: up and down, no gate
      add(b + "ffn_up.weight", L.w_up, {dim(), hidden});
      add(b + "ffn_down.weight", L.w_down, {hidden, dim()});
      if (c_.ffn_bias) {
        add_vector(b + "ffn_up.bias", L.b_up, {hidden});
        add_vector(b + "ffn_down.bias", L.b_down, {dim()});
      }
      return;
    }
    if (fused_gate_up_) {
      add_built(b + "ffn_up.weight", [&L] { return concat_rows({&L.w_gate, &L.w_up}); }, {dim(), 2 * hidden});
      add(b + "ffn_down.weight", L.w_down, {hidden, dim()});
      return;
    }
    add(b + "ffn_gate.weight", L.w_gate, {dim(), hidden});
    add(b + "ffn_down.weight", L.w_down, {hidden, dim()});
    add(b + "ffn_up.weight", L.w_up, {dim(), hidden});
  }

  // Each kind of expert matrix as one 3-D tensor [n_experts][rows][cols], experts in order.
  void add_expert_tensor(const std::string& name, const std::vector<WeightMatrix>& parts, std::vector<uint64_t> ne) {
    if (!drawn_ && parts.size() != ne[2]) fail(name + " has " + std::to_string(parts.size()) + " experts");
    add_built(
        name,
        [&parts] {
          std::vector<const WeightMatrix*> all;
          for (const WeightMatrix& p : parts) all.push_back(&p);
          return concat_rows(all);
        },
        std::move(ne));
  }

  void add_experts(const std::string& b, const ExpertWeights& x) {
    const uint64_t E = uint64_t(c_.moe.n_experts), H = uint64_t(c_.moe.expert_hidden),
                   S = uint64_t(c_.moe.shared_hidden);
    add(b + "ffn_gate_inp.weight", x.router, {dim(), E});
    add_expert_tensor(b + "ffn_gate_exps.weight", x.gate, {dim(), H, E});
    add_expert_tensor(b + "ffn_down_exps.weight", x.down, {H, dim(), E});
    add_expert_tensor(b + "ffn_up_exps.weight", x.up, {dim(), H, E});
    if (c_.moe.expert_biases) {
      add_vector(b + "ffn_gate_inp.bias", x.router_bias, {E});
      add_vector(b + "ffn_gate_exps.bias", x.gate_bias, {H, E});
      add_vector(b + "ffn_down_exps.bias", x.down_bias, {dim(), E});
      add_vector(b + "ffn_up_exps.bias", x.up_bias, {H, E});
    }
    if (S == 0) return;
    add_vector(b + "ffn_gate_inp_shexp.weight", x.shared_gate, {dim()});
    add(b + "ffn_gate_shexp.weight", x.shared_w_gate, {dim(), S});
    add(b + "ffn_down_shexp.weight", x.shared_w_down, {S, dim()});
    add(b + "ffn_up_shexp.weight", x.shared_w_up, {dim(), S});
  }

  // llama.cpp's nextn layout: the block after the main layers, plus its projection and norms.
  void add_mtp(const MtpWeights& mtp) {
    const std::string b = "blk." + std::to_string(c_.n_layers) + ".nextn.";
    add_layer(c_.n_layers, mtp.layer);
    add_vector(b + "enorm.weight", mtp.enorm, {dim()});
    add_vector(b + "hnorm.weight", mtp.hnorm, {dim()});
    add(b + "eh_proj.weight", mtp.eh_proj, {2 * dim(), dim()});
    add_vector(b + "shared_head_norm.weight", mtp.shared_head_norm, {dim()});
  }

  void add_rope_factors(const std::vector<float>& factors) {
    const uint64_t half = uint64_t(c_.rotary_dims()) / 2;
    if (!arch_.longrope_factors || c_.arch == "llama") return add_vector("rope_freqs.weight", factors, {half});
    // LongRoPE: the factors given serve beyond the original context; within it, none (all 1).
    if (c_.max_seq_len <= c_.rope_original_context) fail("LongRoPE factors need a context beyond the original one");
    add_vector("rope_factors_long.weight", factors, {half});
    add_built("rope_factors_short.weight", [half] { return WeightMatrix(std::vector<float>(half, 1.0f)); }, {half});
  }

  const LlamaConfig& c_;
  const ArchSpec& arch_;
  bool drawn_, permute_, fused_qkv_, fused_gate_up_;
  std::vector<PlannedTensor> plan_;
};

}  // namespace

std::vector<PlannedTensor> plan_llama_cpp_tensors(const LlamaConfig& c, const ArchSpec& arch, const LlamaWeights& w,
                                                  bool drawn) {
  return Planner(c, arch, drawn).plan(w);
}

}  // namespace parley
