#include "model/gguf_layout.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_set>
#include <vector>

#include "kernels/quant/ggml_types.hpp"
#include "model/architecture.hpp"

namespace parley {
namespace {

std::string shape_str(const std::vector<uint64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

// Splits the rows of a fused [a + b + c][in] matrix back into its parts (the forward pass fuses them again).
void split_rows(const WeightMatrix& fused, int64_t in, std::initializer_list<std::pair<WeightMatrix*, int64_t>> parts) {
  int64_t at = 0;
  for (auto [out, rows] : parts) {
    *out = fused.row_slice(at, rows, in);
    at += rows;
  }
}

// Reads the tensors one part of the model at a time and remembers each name it read.
class LayoutReader {
 public:
  LayoutReader(const GgufFile& f, const LlamaConfig& c) : f_(f), c_(c), dim_(uint64_t(c.dim)) {}

  LlamaWeights weights();
  // The tensors the layout did not read: each one refused.
  void refuse_unread() const {
    for (const auto& t : f_.tensors())
      if (!read_.contains(t.name))
        f_.fail("unexpected tensor '" + t.name + "' (not part of the " + c_.arch + " layout Parley runs)");
  }

 private:
  const GgufTensorInfo& checked(const std::string& name, const std::vector<uint64_t>& ne) {
    const GgufTensorInfo& t = f_.tensor(name);
    if (t.ne != ne)
      f_.fail("shape mismatch for tensor '" + name + "': expected " + shape_str(ne) + ", found " + shape_str(t.ne));
    read_.insert(name);
    return t;
  }
  std::vector<float> vec(const std::string& name, std::vector<uint64_t> ne) { return f_.dequantize(checked(name, ne)); }
  // Matrices stay in the file's type: [ne[1]][ne[0]] rows of blocks.
  WeightMatrix matrix(const std::string& name, std::vector<uint64_t> ne) {
    const GgufTensorInfo& t = checked(name, ne);
    return WeightMatrix::from_blocks(t.type, int64_t(ne[1]), int64_t(ne[0]),
                                     std::vector<uint8_t>(t.data, t.data + t.nbytes));
  }
  // A 3-D tensor [n_experts][rows][cols] as one matrix per expert, copied out of the file one expert at a time.
  std::vector<WeightMatrix> experts(const std::string& name, std::vector<uint64_t> ne) {
    const GgufTensorInfo& t = checked(name, ne);
    const size_t bytes = quant::row_bytes(t.type, int64_t(ne[0])) * size_t(ne[1]);
    std::vector<WeightMatrix> out;
    for (uint64_t e = 0; e < ne[2]; ++e) {
      const uint8_t* at = t.data + e * bytes;
      out.push_back(
          WeightMatrix::from_blocks(t.type, int64_t(ne[1]), int64_t(ne[0]), std::vector<uint8_t>(at, at + bytes)));
    }
    return out;
  }
  LayerNormWeights layer_norm(const std::string& name) {
    return {vec(name + ".weight", {dim_}), vec(name + ".bias", {dim_})};
  }
  ExpertWeights moe(const std::string& b);
  void encoder_embedding(LlamaWeights& w);
  void classifier(LlamaWeights& w);
  void attention(const std::string& b, LayerWeights& L);
  void ffn(const std::string& b, LayerWeights& L);
  LayerWeights layer(int l);
  std::vector<float> rope_freq_factors();

  const GgufFile& f_;
  const LlamaConfig& c_;
  const uint64_t dim_;
  std::unordered_set<std::string> read_;
};

ExpertWeights LayoutReader::moe(const std::string& b) {
  const uint64_t E = uint64_t(c_.moe.n_experts), H = uint64_t(c_.moe.expert_hidden), S = uint64_t(c_.moe.shared_hidden);
  ExpertWeights x;
  x.router = matrix(b + "ffn_gate_inp.weight", {dim_, E});
  if (f_.find_tensor(b + "ffn_gate_up_exps.weight")) {  // gate and up fused: each expert's gate rows, then its up rows
    for (WeightMatrix& gu : experts(b + "ffn_gate_up_exps.weight", {dim_, 2 * H, E})) {
      x.gate.push_back(gu.row_slice(0, int64_t(H), int64_t(dim_)));
      x.up.push_back(gu.row_slice(int64_t(H), int64_t(H), int64_t(dim_)));
    }
  } else {
    x.gate = experts(b + "ffn_gate_exps.weight", {dim_, H, E});
    x.up = experts(b + "ffn_up_exps.weight", {dim_, H, E});
  }
  x.down = experts(b + "ffn_down_exps.weight", {H, dim_, E});
  if (c_.moe.expert_biases) {
    x.router_bias = vec(b + "ffn_gate_inp.bias", {E});
    x.gate_bias = vec(b + "ffn_gate_exps.bias", {H, E});
    x.up_bias = vec(b + "ffn_up_exps.bias", {H, E});
    x.down_bias = vec(b + "ffn_down_exps.bias", {dim_, E});
  }
  if (S > 0) {
    x.shared_gate = vec(b + "ffn_gate_inp_shexp.weight", {dim_});
    x.shared_w_gate = matrix(b + "ffn_gate_shexp.weight", {dim_, S});
    x.shared_w_up = matrix(b + "ffn_up_shexp.weight", {dim_, S});
    x.shared_w_down = matrix(b + "ffn_down_shexp.weight", {S, dim_});
  }
  return x;
}

void LayoutReader::attention(const std::string& b, LayerWeights& L) {
  const uint64_t qd = c_.q_dim(), kv = c_.kv_dim(), hd = c_.head_dim();
  if (f_.find_tensor(b + "attn_qkv.weight")) {  // Phi-3 stores Q, K and V as one matrix
    split_rows(matrix(b + "attn_qkv.weight", {dim_, qd + 2 * kv}), int64_t(dim_),
               {{&L.wq, qd}, {&L.wk, kv}, {&L.wv, kv}});
    if (c_.qkv_bias) {
      const std::vector<float> bias = vec(b + "attn_qkv.bias", {qd + 2 * kv});
      L.bq.assign(bias.begin(), bias.begin() + std::ptrdiff_t(qd));
      L.bk.assign(bias.begin() + std::ptrdiff_t(qd), bias.begin() + std::ptrdiff_t(qd + kv));
      L.bv.assign(bias.begin() + std::ptrdiff_t(qd + kv), bias.end());
    }
  } else {
    L.wq = matrix(b + "attn_q.weight", {dim_, qd});
    L.wk = matrix(b + "attn_k.weight", {dim_, kv});
    L.wv = matrix(b + "attn_v.weight", {dim_, kv});
    if (c_.qkv_bias) {
      L.bq = vec(b + "attn_q.bias", {qd});
      L.bk = vec(b + "attn_k.bias", {kv});
      L.bv = vec(b + "attn_v.bias", {kv});
    }
  }
  if (c_.qk_norm) {
    L.q_norm = vec(b + "attn_q_norm.weight", {hd});
    L.k_norm = vec(b + "attn_k_norm.weight", {hd});
  }
  L.wo = matrix(b + "attn_output.weight", {qd, dim_});
  if (c_.attn_out_bias) L.bo = vec(b + "attn_output.bias", {dim_});
  if (c_.attn_sinks) L.attn_sinks = vec(b + "attn_sinks.weight", {uint64_t(c_.n_heads)});
}

void LayoutReader::ffn(const std::string& b, LayerWeights& L) {
  const uint64_t hidden = c_.hidden_dim;
  if (!c_.encoder) L.ffn_norm = vec(b + std::string(find_arch(c_.arch)->ffn_norm) + ".weight", {dim_});
  if (c_.moe.enabled()) {
    L.experts = moe(b);
    return;
  }
  if (c_.activation == FfnActivation::Gelu) {  // BERT: up, then down, no gate
    L.w_up = matrix(b + "ffn_up.weight", {dim_, hidden});
    if (c_.ffn_bias) {
      L.b_up = vec(b + "ffn_up.bias", {hidden});
      L.b_down = vec(b + "ffn_down.bias", {dim_});
    }
  } else if (f_.find_tensor(b + "ffn_gate.weight")) {
    L.w_gate = matrix(b + "ffn_gate.weight", {dim_, hidden});
    L.w_up = matrix(b + "ffn_up.weight", {dim_, hidden});
  } else {  // Phi-3: one up matrix whose first half is the gate
    split_rows(matrix(b + "ffn_up.weight", {dim_, 2 * hidden}), int64_t(dim_),
               {{&L.w_gate, hidden}, {&L.w_up, hidden}});
  }
  L.w_down = matrix(b + "ffn_down.weight", {hidden, dim_});
}

LayerWeights LayoutReader::layer(int l) {
  const std::string b = "blk." + std::to_string(l) + ".";
  LayerWeights L;
  if (c_.encoder) {
    L.attn_out_norm = layer_norm(b + "attn_output_norm");
    L.layer_out_norm = layer_norm(b + "layer_output_norm");
  } else {
    L.attn_norm = vec(b + "attn_norm.weight", {dim_});
  }
  attention(b, L);
  ffn(b, L);
  if (c_.post_norms) {
    L.post_attn_norm = vec(b + "post_attention_norm.weight", {dim_});
    L.post_ffn_norm = vec(b + "post_ffw_norm.weight", {dim_});
  }
  return L;
}

std::vector<float> LayoutReader::rope_freq_factors() {
  const uint64_t half_rot = uint64_t(c_.rotary_dims()) / 2;
  std::vector<float> factors;
  if (f_.find_tensor("rope_freqs.weight")) {
    factors = vec("rope_freqs.weight", {half_rot});
  } else if (find_arch(c_.arch)->longrope_factors && f_.find_tensor("rope_factors_long.weight")) {
    // As llama.cpp: the long factors serve a context beyond the original one, the short ones otherwise.
    auto long_factors = vec("rope_factors_long.weight", {half_rot});
    auto short_factors = vec("rope_factors_short.weight", {half_rot});
    factors = c_.max_seq_len > c_.rope_original_context ? long_factors : short_factors;
  }
  for (float x : factors)
    if (!(x > 0.0f) || !std::isfinite(x)) f_.fail("RoPE frequency factors must be positive and finite");
  return factors;
}

LlamaWeights LayoutReader::weights() {
  const uint64_t vocab = uint64_t(c_.vocab_size);
  LlamaWeights w;
  w.token_embedding = matrix("token_embd.weight", {dim_, vocab});
  // Grown layer by layer: a corrupt block_count fails on a missing tensor, not a huge allocation.
  for (int l = 0; l < c_.n_layers; ++l) w.layers.push_back(layer(l));
  if (f_.get_int(c_.arch + ".nextn_predict_layers", 0) == 1) {
    const std::string b = "blk." + std::to_string(c_.n_layers) + ".nextn.";
    MtpWeights& mtp = w.mtp.emplace();
    mtp.layer = layer(c_.n_layers);
    mtp.enorm = vec(b + "enorm.weight", {dim_});
    mtp.hnorm = vec(b + "hnorm.weight", {dim_});
    mtp.eh_proj = matrix(b + "eh_proj.weight", {2 * dim_, dim_});
    mtp.shared_head_norm = vec(b + "shared_head_norm.weight", {dim_});
  }
  w.rope_freq_factors = rope_freq_factors();
  if (c_.encoder)
    encoder_embedding(w);
  else
    w.output_norm = vec("output_norm.weight", {dim_});
  if (f_.find_tensor("output.weight")) w.output = matrix("output.weight", {dim_, vocab});
  classifier(w);
  return w;
}

// Token type 0's row (llama.cpp hard-codes type 0), absolute positions (bert), and the embeddings' LayerNorm.
void LayoutReader::encoder_embedding(LlamaWeights& w) {
  if (const GgufTensorInfo* t = f_.find_tensor("token_types.weight")) {
    if (t->ne.size() != 2 || t->ne[1] < 1) f_.fail("tensor 'token_types.weight' is not [types][dim]");
    const std::vector<float> types = vec("token_types.weight", {dim_, t->ne[1]});
    w.token_type.assign(types.begin(), types.begin() + std::ptrdiff_t(dim_));
  }
  if (c_.learned_positions) w.position_embedding = matrix("position_embd.weight", {dim_, uint64_t(c_.max_seq_len)});
  w.embedding_norm = layer_norm("token_embd_norm");
}

// A reranker's head: cls.output (llama.cpp's n_cls_out: the labels' count, else 1), after a cross-encoder's
// dense cls layer when there is one.
void LayoutReader::classifier(LlamaWeights& w) {
  if (f_.find_tensor("cls.weight")) {
    w.cls = matrix("cls.weight", {dim_, dim_});
    if (f_.find_tensor("cls.bias")) w.cls_bias = vec("cls.bias", {dim_});
  }
  if (!f_.find_tensor("cls.output.weight")) return;
  const uint64_t n_out = std::max<uint64_t>(1, c_.classifier_labels.size());
  w.cls_out = matrix("cls.output.weight", {dim_, n_out});
  if (f_.find_tensor("cls.output.bias")) w.cls_out_bias = vec("cls.output.bias", {n_out});
}

}  // namespace

LlamaWeights read_gguf_weights(const GgufFile& f, LlamaConfig& config) {
  LayoutReader reader(f, config);
  LlamaWeights w = reader.weights();
  config.tied_output = f.find_tensor("output.weight") == nullptr;
  reader.refuse_unread();
  return w;
}

}  // namespace parley
