#include "model/llama.hpp"

#include "kernels/cpu/reference.hpp"
#include "kernels/quant/quantize.hpp"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace parley {

void LlamaModel::add_into(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

namespace {
const float* or_null(const std::vector<float>& bias) { return bias.empty() ? nullptr : bias.data(); }
}  // namespace

LlamaModel::Layer LlamaModel::pack_layer(LayerWeights& w, bool sliding) const {
  const auto& c = config_;
  const cpu::QuantIsa pack_isa = cpu::quant_isa_for(backend_->isa());
  auto need = [&](const std::vector<float>& v, size_t n, const char* what) {
    if (v.size() != n) throw std::invalid_argument(std::string("layer weights: ") + what + " has the wrong size");
  };
  Layer l;
  l.sliding = sliding;
  l.attn_norm = std::move(w.attn_norm);
  l.wqkv = Linear::stack(c.dim, {&w.wq, &w.wk, &w.wv}, pack_isa);
  l.wo = Linear::stack(c.q_dim(), {&w.wo}, pack_isa);
  l.ffn_norm = std::move(w.ffn_norm);
  if (c.moe.enabled()) {
    l.moe.emplace(c, w.experts, pack_isa);
  } else {
    if (c.activation == FfnActivation::Gelu)  // no gate: the up rows alone
      l.w_gate_up = Linear::stack(c.dim, {&w.w_up}, pack_isa);
    else
      l.w_gate_up = Linear::stack(c.dim, {&w.w_gate, &w.w_up}, pack_isa);
    l.w_down = Linear::stack(c.hidden_dim, {&w.w_down}, pack_isa);
  }
  if (c.qkv_bias) {
    need(w.bq, size_t(c.q_dim()), "bq");
    need(w.bk, size_t(c.kv_dim()), "bk");
    need(w.bv, size_t(c.kv_dim()), "bv");
    for (auto* b : {&w.bq, &w.bk, &w.bv}) l.bqkv.insert(l.bqkv.end(), b->begin(), b->end());
  }
  if (c.attn_out_bias) {
    need(w.bo, size_t(c.dim), "bo");
    l.bo = std::move(w.bo);
  }
  if (c.attn_sinks) {
    need(w.attn_sinks, size_t(c.n_heads), "attn_sinks");
    l.attn_sinks = std::move(w.attn_sinks);
  }
  if (c.qk_norm) {
    need(w.q_norm, size_t(c.head_dim()), "q_norm");
    need(w.k_norm, size_t(c.head_dim()), "k_norm");
    l.q_norm = std::move(w.q_norm);
    l.k_norm = std::move(w.k_norm);
  }
  if (c.encoder) {
    for (const LayerNormWeights* n : {&w.attn_out_norm, &w.layer_out_norm}) {
      need(n->weight, size_t(c.dim), "an encoder's LayerNorm weight");
      need(n->bias, size_t(c.dim), "an encoder's LayerNorm bias");
    }
    l.attn_out_norm = std::move(w.attn_out_norm);
    l.layer_out_norm = std::move(w.layer_out_norm);
  }
  if (c.ffn_bias) {
    need(w.b_up, size_t(c.hidden_dim), "b_up");
    need(w.b_down, size_t(c.dim), "b_down");
    l.b_up = std::move(w.b_up);
    l.b_down = std::move(w.b_down);
  }
  if (c.post_norms) {
    need(w.post_attn_norm, size_t(c.dim), "post_attn_norm");
    need(w.post_ffn_norm, size_t(c.dim), "post_ffn_norm");
    l.post_attn_norm = std::move(w.post_attn_norm);
    l.post_ffn_norm = std::move(w.post_ffn_norm);
  }
  return l;
}

LlamaModel::LlamaModel(const LlamaConfig& config, LlamaWeights weights, const cpu::CpuBackend& backend)
    : config_(config), backend_(&backend) {
  config_.validate();
  if (int(weights.layers.size()) != config.n_layers) throw std::invalid_argument("weights have the wrong layer count");
  if (!weights.rope_freq_factors.empty() && weights.rope_freq_factors.size() != size_t(config_.rotary_dims() / 2))
    throw std::invalid_argument("rope_freq_factors needs rotary_dims / 2 values");
  const int dim = config.dim;
  const cpu::QuantIsa pack_isa = cpu::quant_isa_for(backend.isa());
  const bool tied = weights.output.empty();  // tied: the head's packed rows serve as the embedding, one copy
  output_ = Linear::stack(dim, {tied ? &weights.token_embedding : &weights.output}, pack_isa);
  if (!tied) token_embedding_ = std::move(weights.token_embedding);
  output_norm_ = std::move(weights.output_norm);
  rope_freq_factors_ = std::move(weights.rope_freq_factors);
  if (config_.encoder) {
    if (config_.learned_positions) position_embedding_ = weights.position_embedding.to_f32();
    if (position_embedding_.size() != (config_.learned_positions ? size_t(config_.max_seq_len) * dim : 0))
      throw std::invalid_argument("position embeddings must be [context][dim]");
    token_type_ = std::move(weights.token_type);
    embedding_norm_ = std::move(weights.embedding_norm);
    if (!token_type_.empty() && token_type_.size() != size_t(dim))
      throw std::invalid_argument("token type row must be [dim]");
    if (embedding_norm_.weight.size() != size_t(dim) || embedding_norm_.bias.size() != size_t(dim))
      throw std::invalid_argument("the embeddings' LayerNorm must be [dim]");
  }
  classifier_ = ClassifierHead::from(config_, weights);
  for (int l = 0; l < config.n_layers; ++l)
    layers_.push_back(pack_layer(weights.layers[size_t(l)], config_.is_sliding_layer(l)));
  if (weights.mtp) {
    MtpWeights& w = *weights.mtp;
    mtp_.emplace();
    mtp_->enorm = std::move(w.enorm);
    mtp_->hnorm = std::move(w.hnorm);
    mtp_->shared_head_norm = std::move(w.shared_head_norm);
    mtp_->eh_proj = Linear::stack(2 * dim, {&w.eh_proj}, pack_isa);
    mtp_->layer = pack_layer(w.layer, false);
  }
  malloc_trim(0);  // glibc keeps the heap chunks the file's blocks were freed from; give them back to the OS
}

size_t LlamaModel::layer_bytes(const Layer& l, bool active_only) {
  const size_t ffn =
      !l.moe ? l.w_gate_up.bytes() + l.w_down.bytes() : (active_only ? l.moe->active_bytes() : l.moe->bytes());
  return l.wqkv.bytes() + l.wo.bytes() + ffn;
}

size_t LlamaModel::weight_bytes() const {
  size_t total = token_embedding_.bytes() + output_.bytes();
  for (const Layer& l : layers_) total += layer_bytes(l, false);
  if (mtp_) total += mtp_->eh_proj.bytes() + layer_bytes(mtp_->layer, false);
  return total;
}

size_t LlamaModel::streamed_weight_bytes() const {
  size_t total = output_.bytes();
  for (const Layer& l : layers_) total += layer_bytes(l, true);
  return total;
}

size_t LlamaModel::layer_weight_elements() const {
  size_t total = 0;
  for (const Layer& l : layers_) {
    for (const Linear* m : {&l.wqkv, &l.wo, &l.w_gate_up, &l.w_down}) total += size_t(m->N()) * size_t(m->K());
    if (l.moe) total += l.moe->active_elements();
  }
  return total;
}

cpu::AttentionMetadata LlamaModel::prepare(const ForwardBatch& batch) {
  const auto& c = config_;
  const int M = batch.num_tokens();
  const int dim = c.dim, qd = c.q_dim(), kv_dim = c.kv_dim(), hidden = c.hidden_dim;
  for (int i = 0; i < M; ++i) {
    if (batch.token_ids[i] < 0 || batch.token_ids[i] >= c.vocab_size)
      throw std::out_of_range("token id " + std::to_string(batch.token_ids[i]) + " outside the vocabulary");
    if (batch.positions[i] < 0 || batch.positions[i] >= c.max_seq_len)
      throw std::out_of_range("position " + std::to_string(batch.positions[i]) + " outside the context");
  }
  x_.resize(size_t(M) * dim);
  xb_.resize(size_t(M) * dim);
  qkv_.resize(size_t(M) * (qd + 2 * kv_dim));
  q_.resize(size_t(M) * qd);
  k_.resize(size_t(M) * kv_dim);
  v_.resize(size_t(M) * kv_dim);
  attn_.resize(size_t(M) * qd);
  hb_.resize(size_t(M) * 2 * hidden);
  hidden_.resize(size_t(M) * hidden);
  last_num_tokens_ = M;
  cpu::AttentionMetadata meta;
  meta.num_tokens = M;
  meta.positions = batch.positions.data();
  meta.token_seq = batch.token_seq.data();
  meta.block_tables = batch.block_tables.data();
  meta.max_blocks_per_seq = batch.max_blocks_per_seq;
  if (c.encoder) {
    encoder_key_ends(batch);
    meta.key_ends = key_ends_.data();
  }
  if (batch.num_kv_groups < 1 || batch.slot_mapping.size() != size_t(batch.num_kv_groups) * M)
    throw std::invalid_argument("forward: " + std::to_string(batch.slot_mapping.size()) + " slots for " +
                                std::to_string(M) + " tokens in " + std::to_string(batch.num_kv_groups) + " KV groups");
  return meta;
}

void LlamaModel::rotate(const Layer& L, const ForwardBatch& batch) {
  const auto& c = config_;
  const int M = batch.num_tokens(), hd = c.head_dim();
  if (c.qk_norm) {  // per head: rows of head_dim
    backend_->rmsnorm(q_.data(), L.q_norm.data(), q_.data(), M * c.n_heads, hd, c.norm_eps);
    backend_->rmsnorm(k_.data(), L.k_norm.data(), k_.data(), M * c.n_kv_heads, hd, c.norm_eps);
  }
  const RopeConfig rope = L.sliding ? c.local_rope : RopeConfig{c.rope_theta, c.rope_freq_scale};
  const cpu::RopeSpec spec = rope_spec(c, rope, rope_freq_factors_.empty() ? nullptr : rope_freq_factors_.data());
  backend_->rope(q_.data(), batch.positions.data(), M, c.n_heads, hd, spec);
  backend_->rope(k_.data(), batch.positions.data(), M, c.n_kv_heads, hd, spec);
}

void LlamaModel::attend(const Layer& L, int l, KvCache& kv, const ForwardBatch& batch, cpu::AttentionMetadata meta,
                        const float* in, const float* residual) {
  const auto& c = config_;
  const auto& be = *backend_;
  const int M = batch.num_tokens();
  const int qd = c.q_dim(), kv_dim = c.kv_dim(), hd = c.head_dim();
  L.wqkv.matmul(be, in, qkv_.data(), M, part_);
  be.split_columns(qkv_.data(), or_null(L.bqkv), M, {{q_.data(), qd}, {k_.data(), kv_dim}, {v_.data(), kv_dim}});
  if (!c.learned_positions) rotate(L, batch);
  const int group = kv.layout().group_of_layer[size_t(l)];
  meta.block_tables = batch.group_block_tables(group);
  const cpu::KvLayerView kvl = kv.layer(l);
  be.kv_write(kvl, k_.data(), v_.data(), batch.group_slot_mapping(group), M);
  const cpu::AttentionSpec attention{c.query_scale, c.attn_softcap, L.sliding ? c.sliding_window : 0,
                                     L.attn_sinks.empty() ? nullptr : L.attn_sinks.data()};
  be.paged_attention(q_.data(), kvl, meta, c.n_heads, c.n_kv_heads, hd, attn_.data(), attention);
  L.wo.matmul(be, attn_.data(), xb_.data(), M, part_);
  be.add_rows(xb_.data(), or_null(L.bo), residual, M, c.dim);
}

void LlamaModel::feed_forward(Layer& L, const float* in, int M, const float* residual) {
  const auto& c = config_;
  const auto& be = *backend_;
  const int dim = c.dim, hidden = c.hidden_dim;
  if (L.moe) {
    hb_.resize(std::max(hb_.size(), size_t(M) * dim));
    L.moe->forward(be, in, hb_.data(), M);
    std::copy_n(hb_.data(), size_t(M) * dim, xb_.data());
    return be.add_rows(xb_.data(), nullptr, residual, M, dim);
  }
  L.w_gate_up.matmul(be, in, hb_.data(), M, part_);
  const float* activated = hidden_.data();
  if (c.activation == FfnActivation::Gelu) {  // hb_ holds up only
    be.gelu_rows(hb_.data(), or_null(L.b_up), M, hidden);
    activated = hb_.data();
  } else if (c.activation == FfnActivation::GeluTanh) {
    be.geglu_rows(hb_.data(), hidden_.data(), M, hidden);
  } else {
    be.swiglu_rows(hb_.data(), hidden_.data(), M, hidden);
  }
  L.w_down.matmul(be, activated, xb_.data(), M, part_);
  be.add_rows(xb_.data(), or_null(L.b_down), residual, M, dim);
}

void LlamaModel::run_layer(Layer& L, int l, KvCache& kv, const ForwardBatch& batch, cpu::AttentionMetadata meta) {
  if (config_.encoder) return run_encoder_layer(L, l, kv, batch, meta);
  const auto& c = config_;
  const auto& be = *backend_;
  const int M = batch.num_tokens(), dim = c.dim;
  be.rmsnorm(x_.data(), L.attn_norm.data(), xb_.data(), M, dim, c.norm_eps);
  attend(L, l, kv, batch, meta, xb_.data(), nullptr);
  if (!L.post_attn_norm.empty()) be.rmsnorm(xb_.data(), L.post_attn_norm.data(), xb_.data(), M, dim, c.norm_eps);
  be.add_rows(x_.data(), nullptr, xb_.data(), M, dim);
  be.rmsnorm(x_.data(), L.ffn_norm.data(), xb_.data(), M, dim, c.norm_eps);
  feed_forward(L, xb_.data(), M, nullptr);
  if (!L.post_ffn_norm.empty()) be.rmsnorm(xb_.data(), L.post_ffn_norm.data(), xb_.data(), M, dim, c.norm_eps);
  be.add_rows(x_.data(), nullptr, xb_.data(), M, dim);
}

void LlamaModel::head(const ForwardBatch& batch, const std::vector<float>& norm, std::vector<float>& logits) {
  const auto& c = config_;
  const int dim = c.dim;
  const int S = static_cast<int>(batch.logits_indices.size());
  selected_.resize(size_t(S) * dim);
  for (int s = 0; s < S; ++s)
    std::copy_n(x_.data() + size_t(batch.logits_indices[s]) * dim, dim, selected_.data() + size_t(s) * dim);
  xb_.resize(std::max<size_t>(xb_.size(), size_t(S) * dim));
  backend_->rmsnorm(selected_.data(), norm.data(), xb_.data(), S, dim, c.norm_eps);
  logits.resize(size_t(S) * c.vocab_size);
  output_.matmul(*backend_, xb_.data(), logits.data(), S, part_);
  if (c.final_softcap > 0.0f)
    for (float& z : logits) z = cpu::reference::softcap(z, c.final_softcap);
}

void LlamaModel::normed_rows(const ForwardBatch& batch) {
  const int dim = config_.dim, S = int(batch.hidden_indices.size());
  selected_.resize(size_t(S) * dim);
  for (int s = 0; s < S; ++s) {
    const int token = batch.hidden_indices[size_t(s)];
    if (token < 0 || token >= batch.num_tokens())
      throw std::out_of_range("hidden index " + std::to_string(token) + " outside the batch");
    std::copy_n(x_.data() + size_t(token) * dim, dim, selected_.data() + size_t(s) * dim);
  }
  normed_.resize(size_t(S) * dim);
  if (output_norm_.empty())  // an encoder: its last layer's LayerNorm is the final one
    std::copy(selected_.begin(), selected_.end(), normed_.begin());
  else
    backend_->rmsnorm(selected_.data(), output_norm_.data(), normed_.data(), S, dim, config_.norm_eps);
}

void LlamaModel::embed(const ForwardBatch& batch) {
  const int M = batch.num_tokens(), dim = config_.dim;
  if (token_embedding_.empty()) {
    output_.rows(batch.token_ids.data(), M, x_.data());
  } else if (token_embedding_.is_f32()) {
    backend_->embedding(token_embedding_.data(), batch.token_ids.data(), M, dim, x_.data());
  } else {
    const size_t row = quant::row_bytes(token_embedding_.type(), dim);
    for (int i = 0; i < M; ++i)
      quant::dequantize_row(token_embedding_.type(),
                            token_embedding_.blocks().data() + size_t(batch.token_ids[size_t(i)]) * row,
                            x_.data() + size_t(i) * dim, dim);
  }
  if (config_.scale_embeddings) {
    const float scale = std::sqrt(float(dim));
    for (int64_t i = 0; i < int64_t(M) * dim; ++i) x_[size_t(i)] *= scale;
  }
  if (config_.encoder) encoder_embed(batch);
}

void LlamaModel::forward(const ForwardBatch& batch, KvCache& kv, std::vector<float>& logits, int num_layers) {
  if (num_layers < 0) num_layers = config_.n_layers;
  if (num_layers < 1 || num_layers > config_.n_layers)
    throw std::invalid_argument("forward: " + std::to_string(num_layers) + " layers of " +
                                std::to_string(config_.n_layers));
  if (batch.num_kv_groups != kv.layout().num_groups())
    throw std::invalid_argument("forward: block tables for " + std::to_string(batch.num_kv_groups) +
                                " KV groups, the cache has " + std::to_string(kv.layout().num_groups()));
  const cpu::AttentionMetadata meta = prepare(batch);
  embed(batch);
  for (int l = 0; l < num_layers; ++l) run_layer(layers_[size_t(l)], l, kv, batch, meta);
  normed_rows(batch);
  head(batch, output_norm_, logits);
}

void LlamaModel::mtp_forward(const ForwardBatch& batch, std::span<const float> prev_hidden, KvCache& kv,
                             std::vector<float>& logits, std::vector<float>& hidden_out) {
  if (!mtp_) throw std::logic_error("mtp_forward: the model has no multi-token-prediction head");
  const int M = batch.num_tokens(), dim = config_.dim;
  if (prev_hidden.size() != size_t(M) * dim)
    throw std::invalid_argument("mtp_forward: one hidden state per token is needed");
  const cpu::AttentionMetadata meta = prepare(batch);
  const auto& be = *backend_;
  // concat(enorm(embedding of the token), hnorm(hidden state at its position)), projected back to dim.
  concat_.resize(size_t(M) * 2 * dim);
  embed(batch);
  be.rmsnorm(x_.data(), mtp_->enorm.data(), xb_.data(), M, dim, config_.norm_eps);
  for (int i = 0; i < M; ++i) std::copy_n(xb_.data() + size_t(i) * dim, dim, concat_.data() + size_t(i) * 2 * dim);
  be.rmsnorm(prev_hidden.data(), mtp_->hnorm.data(), xb_.data(), M, dim, config_.norm_eps);
  for (int i = 0; i < M; ++i)
    std::copy_n(xb_.data() + size_t(i) * dim, dim, concat_.data() + size_t(i) * 2 * dim + dim);
  mtp_->eh_proj.matmul(be, concat_.data(), x_.data(), M, part_);
  run_layer(mtp_->layer, 0, kv, batch, meta);
  hidden_out.assign(x_.begin(), x_.begin() + size_t(M) * dim);
  head(batch, mtp_->shared_head_norm, logits);
}

}  // namespace parley
