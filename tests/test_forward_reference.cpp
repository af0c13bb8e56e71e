// The paged, fused, vectorized forward pass against a plain transcription of llama2.c's forward()
// (scalar, one token at a time, contiguous KV), across the config table: tied and untied heads,
// both RoPE layouts, grouped-query and full attention.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "kernels/cpu/reference.hpp"
#include "model/llama.hpp"
#include "model/random_model.hpp"

using namespace parley;
namespace reference = parley::cpu::reference;

namespace {

// Logits of every position of `tokens`, computed the naive way.
std::vector<float> naive_forward(const LlamaConfig& c, const LlamaWeights& w, const std::vector<int>& tokens) {
  const int dim = c.dim, kv_dim = c.kv_dim(), hd = c.head_dim(), T = int(tokens.size());
  std::vector<float> kc(size_t(c.n_layers) * T * kv_dim), vc(kc.size()), logits;
  std::vector<float> x(dim), xb(dim), q(dim), k(kv_dim), v(kv_dim), att(T), o(dim), h1(c.hidden_dim), h3(c.hidden_dim),
      tmp(dim), lg(c.vocab_size);
  for (int pos = 0; pos < T; ++pos) {
    std::copy_n(w.token_embedding.data() + size_t(tokens[pos]) * dim, dim, x.data());
    for (int l = 0; l < c.n_layers; ++l) {
      const LayerWeights& L = w.layers[l];
      reference::rmsnorm(x.data(), L.attn_norm.data(), xb.data(), 1, dim, c.norm_eps);
      reference::matmul(xb.data(), L.wq.data(), q.data(), 1, dim, dim);
      reference::matmul(xb.data(), L.wk.data(), k.data(), 1, kv_dim, dim);
      reference::matmul(xb.data(), L.wv.data(), v.data(), 1, kv_dim, dim);
      reference::rope(q.data(), &pos, 1, c.n_heads, hd, c.rope_theta, c.rope_layout);
      reference::rope(k.data(), &pos, 1, c.n_kv_heads, hd, c.rope_theta, c.rope_layout);
      float* kl = kc.data() + size_t(l) * T * kv_dim;
      float* vl = vc.data() + size_t(l) * T * kv_dim;
      std::copy(k.begin(), k.end(), kl + size_t(pos) * kv_dim);
      std::copy(v.begin(), v.end(), vl + size_t(pos) * kv_dim);
      for (int h = 0; h < c.n_heads; ++h) {
        const int kvh = h / (c.n_heads / c.n_kv_heads);
        float mx = -INFINITY;
        for (int t = 0; t <= pos; ++t) {
          float s = 0;
          for (int d = 0; d < hd; ++d) s += q[h * hd + d] * kl[size_t(t) * kv_dim + kvh * hd + d];
          att[t] = s / std::sqrt(float(hd));
          mx = std::max(mx, att[t]);
        }
        float sum = 0;
        for (int t = 0; t <= pos; ++t) sum += (att[t] = std::exp(att[t] - mx));
        for (int d = 0; d < hd; ++d) {
          float acc = 0;
          for (int t = 0; t <= pos; ++t) acc += att[t] / sum * vl[size_t(t) * kv_dim + kvh * hd + d];
          o[h * hd + d] = acc;
        }
      }
      reference::matmul(o.data(), L.wo.data(), tmp.data(), 1, dim, dim);
      for (int i = 0; i < dim; ++i) x[i] += tmp[i];
      reference::rmsnorm(x.data(), L.ffn_norm.data(), xb.data(), 1, dim, c.norm_eps);
      reference::matmul(xb.data(), L.w_gate.data(), h1.data(), 1, c.hidden_dim, dim);
      reference::matmul(xb.data(), L.w_up.data(), h3.data(), 1, c.hidden_dim, dim);
      reference::swiglu(h1.data(), h3.data(), h1.data(), c.hidden_dim);
      reference::matmul(h1.data(), L.w_down.data(), tmp.data(), 1, dim, c.hidden_dim);
      for (int i = 0; i < dim; ++i) x[i] += tmp[i];
    }
    reference::rmsnorm(x.data(), w.output_norm.data(), xb.data(), 1, dim, c.norm_eps);
    reference::matmul(xb.data(), w.output_head().data(), lg.data(), 1, c.vocab_size, dim);
    logits.insert(logits.end(), lg.begin(), lg.end());
  }
  return logits;
}

}  // namespace

TEST_CASE("the forward pass equals a naive llama2.c-style forward across the config table", "[forward]") {
  struct Row {
    const char* name;
    bool tied;
    RopeLayout rope;
    int n_kv_heads;
  };
  const Row rows[] = {{"tied, adjacent, GQA", true, RopeLayout::Adjacent, 2},
                      {"untied, NeoX, GQA", false, RopeLayout::NeoX, 2},
                      {"untied, adjacent, MHA", false, RopeLayout::Adjacent, 4}};
  for (const Row& row : rows) {
    LlamaConfig c = builtin_model_config();
    c.dim = 48, c.hidden_dim = 100, c.n_layers = 2, c.n_heads = 4, c.vocab_size = 400, c.max_seq_len = 64;
    c.n_kv_heads = row.n_kv_heads, c.tied_output = row.tied, c.rope_layout = row.rope;
    const ModelFile m = make_random_model(c, 77);
    const std::vector<int> tokens{1, 17, 300, 42, 42, 5, 399, 260, 3, 77, 11};
    const auto want = naive_forward(c, m.weights, tokens);

    cpu::CpuBackend backend(2);
    LlamaModel model(c, m.weights, backend);
    KvCache kv(c, 8, 4);
    ForwardBatch b;
    b.max_blocks_per_seq = 4;
    b.block_tables = {6, 1, 7, 2};  // scattered, out of order
    for (int p = 0; p < int(tokens.size()); ++p) {
      b.token_ids.push_back(tokens[p]);
      b.positions.push_back(p);
      b.token_seq.push_back(0);
      b.slot_mapping.push_back(int64_t(b.block_tables[p / 4]) * 4 + p % 4);
      b.logits_indices.push_back(p);
    }
    std::vector<float> got;
    model.forward(b, kv, got);
    INFO(row.name);
    REQUIRE(got.size() == want.size());
    double max_err = 0, max_mag = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      max_err = std::max(max_err, double(std::fabs(got[i] - want[i])));
      max_mag = std::max(max_mag, double(std::fabs(want[i])));
    }
    INFO("max |error| " << max_err << " of max |logit| " << max_mag);
    REQUIRE(max_mag > 0.1);                    // the model produces real signal
    REQUIRE(max_err < 2e-5 * max_mag + 1e-5);  // only summation order differs
  }
}

TEST_CASE("an untied head is really used", "[forward]") {
  LlamaConfig c = builtin_model_config();
  c.n_layers = 1, c.vocab_size = 400, c.max_seq_len = 32;
  c.tied_output = false;
  ModelFile untied = make_random_model(c, 5);
  ModelFile tied = untied;
  tied.weights.output = {};
  cpu::CpuBackend backend(1);
  LlamaModel a(c, untied.weights, backend), b(c, tied.weights, backend);
  ForwardBatch batch;
  batch.max_blocks_per_seq = 1;
  batch.block_tables = {0};
  batch.token_ids = {1, 9};
  batch.positions = {0, 1};
  batch.token_seq = {0, 0};
  batch.slot_mapping = {0, 1};
  batch.logits_indices = {1};
  KvCache kv1(c, 1, 16), kv2(c, 1, 16);
  std::vector<float> la, lb;
  a.forward(batch, kv1, la);
  b.forward(batch, kv2, lb);
  REQUIRE(la != lb);
}
