// The encoder half of LlamaModel (BERT-family: bert, nomic-bert), as llama.cpp's build_bert: bidirectional attention
// over whole sequences, post-LayerNorm after each residual add, token type 0 and absolute positions in the embedding.
#include <string>

#include "model/llama.hpp"

namespace parley {

void LlamaModel::encoder_key_ends(const ForwardBatch& batch) {
  const int M = batch.num_tokens();
  key_ends_.assign(size_t(M), 0);
  for (int i = 0, end; i < M; i = end) {  // a sequence's tokens are consecutive, positions 0..n-1
    for (end = i + 1; end < M && batch.token_seq[size_t(end)] == batch.token_seq[size_t(i)];) ++end;
    for (int t = i; t < end; ++t)
      if (batch.positions[size_t(t)] != t - i)
        throw std::invalid_argument("forward: an encoder needs each sequence whole in one step (token " +
                                    std::to_string(t) + " is at position " +
                                    std::to_string(batch.positions[size_t(t)]) + ")");
    std::fill(key_ends_.begin() + i, key_ends_.begin() + end, end - i);
  }
}

void LlamaModel::encoder_embed(const ForwardBatch& batch) {
  const int M = batch.num_tokens(), dim = config_.dim;
  for (int i = 0; i < M; ++i) {
    float* row = x_.data() + size_t(i) * dim;
    if (!token_type_.empty()) add_into(row, token_type_.data(), dim);
    if (config_.learned_positions)
      add_into(row, position_embedding_.data() + size_t(batch.positions[size_t(i)]) * dim, dim);
  }
  backend_->layernorm(x_.data(), embedding_norm_.weight.data(), embedding_norm_.bias.data(), x_.data(), M, dim,
                      config_.norm_eps);
}

void LlamaModel::run_encoder_layer(Layer& L, int l, KvCache& kv, const ForwardBatch& batch,
                                   cpu::AttentionMetadata meta) {
  const auto& be = *backend_;
  const int M = batch.num_tokens(), dim = config_.dim;
  const float eps = config_.norm_eps;
  attend(L, l, kv, batch, meta, x_.data(), x_.data());
  be.layernorm(xb_.data(), L.attn_out_norm.weight.data(), L.attn_out_norm.bias.data(), x_.data(), M, dim, eps);
  feed_forward(L, x_.data(), M, x_.data());
  be.layernorm(xb_.data(), L.layer_out_norm.weight.data(), L.layer_out_norm.bias.data(), x_.data(), M, dim, eps);
}

}  // namespace parley
