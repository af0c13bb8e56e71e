// Mixture-of-experts FFNs: the routing as llama.cpp's build_moe_ffn computes it, the grouped experts against a
// per-token scalar reference, a token's output the same bits alone or in any batch or thread count, and broken
// expert files refused by name. (Agreement with llama.cpp on whole models: tests/e2e/architectures.mjs; the
// differential suites on each MoE architecture: tests/test_architectures.cpp.)
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "kernels/cpu/reference.hpp"
#include "model/convert.hpp"
#include "model/gguf_writer.hpp"
#include "model/moe_ffn.hpp"
#include "model_test_util.hpp"
#include "tiny_arch.hpp"

namespace parley {
namespace {

MoeConfig moe_of(int n, int k, ExpertGating gating, bool normalize) {
  MoeConfig m;
  m.n_experts = n;
  m.n_used = k;
  m.expert_hidden = 8;
  m.gating = gating;
  m.normalize = normalize;
  return m;
}

// The FFN of one token through the chosen experts, every product and sum in double.
std::vector<float> reference_ffn(const LlamaConfig& c, const ExpertWeights& w, const float* x) {
  const int dim = c.dim, H = c.moe.expert_hidden;
  std::vector<float> logits(static_cast<size_t>(c.moe.n_experts));
  cpu::reference::matmul(x, w.router.data(), logits.data(), 1, c.moe.n_experts, dim);
  const ExpertChoice choice = route_token(logits.data(), c.moe);
  std::vector<double> out(static_cast<size_t>(dim), 0.0);
  auto expert = [&](const WeightMatrix& g, const WeightMatrix& u, const WeightMatrix& d, int hidden, double weight) {
    std::vector<double> h(static_cast<size_t>(hidden));
    for (int j = 0; j < hidden; ++j) {
      double gj = 0, uj = 0;
      for (int i = 0; i < dim; ++i)
        gj += double(g[size_t(j) * dim + i]) * x[i], uj += double(u[size_t(j) * dim + i]) * x[i];
      h[size_t(j)] = gj / (1.0 + std::exp(-gj)) * uj;
    }
    for (int i = 0; i < dim; ++i) {
      double y = 0;
      for (int j = 0; j < hidden; ++j) y += double(d[size_t(i) * hidden + j]) * h[size_t(j)];
      out[size_t(i)] += weight * y;
    }
  };
  for (int s = 0; s < c.moe.n_used; ++s) {
    const size_t e = size_t(choice.experts[size_t(s)]);
    expert(w.gate[e], w.up[e], w.down[e], H, choice.weights[size_t(s)]);
  }
  if (c.moe.shared_hidden > 0) {
    double g = 0;
    for (int i = 0; i < dim; ++i) g += double(w.shared_gate[size_t(i)]) * x[i];
    expert(w.shared_w_gate, w.shared_w_up, w.shared_w_down, c.moe.shared_hidden, 1.0 / (1.0 + std::exp(-g)));
  }
  return {out.begin(), out.end()};
}

std::vector<float> inputs(int M, int dim, int seed) {
  std::vector<float> x(size_t(M) * dim);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i * 7 + size_t(seed) * 13) * 0.37f);
  return x;
}

}  // namespace

TEST_CASE("moe routing: softmax, top-k with ties to the lower index, renormalized and scaled", "[moe]") {
  const float logits[6] = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f, 0.0f};
  SECTION("softmax over every expert, the chosen renormalized") {
    const ExpertChoice c = route_token(logits, moe_of(6, 3, ExpertGating::Softmax, true));
    REQUIRE(c.experts == std::vector<int>{1, 3, 4});  // experts 1 and 3 tie: the lower index first
    const double e2 = std::exp(2.0), e1 = std::exp(1.0), sum = 2 * e2 + e1;
    CHECK(c.weights[0] == Approx(e2 / sum).epsilon(1e-6));
    CHECK(c.weights[2] == Approx(e1 / sum).epsilon(1e-6));
  }
  SECTION("not renormalized: the softmax over all six") {
    const ExpertChoice c = route_token(logits, moe_of(6, 2, ExpertGating::Softmax, false));
    double all = 0;
    for (float l : logits) all += std::exp(double(l));
    CHECK(c.weights[0] == Approx(std::exp(2.0) / all).epsilon(1e-6));
    CHECK(c.weights[0] + c.weights[1] < 0.9f);
  }
  SECTION("gpt-oss: the top logits, then a softmax over those only") {
    MoeConfig m = moe_of(6, 2, ExpertGating::SoftmaxSelected, false);
    m.weights_scale = 2.0f;
    const ExpertChoice c = route_token(logits, m);
    REQUIRE(c.experts == std::vector<int>{1, 3});
    CHECK(c.weights[0] == Approx(1.0f));  // two equal logits: half each, times 2
    CHECK(c.weights[1] == Approx(1.0f));
  }
  SECTION("every logit equal: the first k experts") {
    const float same[5] = {0.25f, 0.25f, 0.25f, 0.25f, 0.25f};
    REQUIRE(route_token(same, moe_of(5, 3, ExpertGating::Softmax, true)).experts == std::vector<int>{0, 1, 2});
  }
}

TEST_CASE("moe: the grouped experts equal a per-token reference, and a token's bits do not depend on its batch",
          "[moe][model]") {
  for (const char* arch : {"qwen3moe", "qwen2moe", "mixtral"}) {
    CAPTURE(arch);
    const ModelFile file = test::tiny_model(arch);
    const LlamaConfig& c = file.config;
    ExpertWeights w = file.weights.layers[1].experts;
    const ExpertWeights kept = w;
    cpu::CpuBackend one(1), two(2);
    MoeFfn ffn(c, w, cpu::quant_isa_for(two.isa()));
    const int M = 23, dim = c.dim;
    const std::vector<float> x = inputs(M, dim, 1);
    std::vector<float> out(static_cast<size_t>(M) * dim), alone(static_cast<size_t>(dim));
    ffn.forward(two, x.data(), out.data(), M);
    for (int t = 0; t < M; ++t) {
      CAPTURE(t);
      const std::vector<float> want = reference_ffn(c, kept, x.data() + size_t(t) * dim);
      for (int i = 0; i < dim; ++i) REQUIRE(out[size_t(t) * dim + i] == Approx(want[size_t(i)]).margin(2e-5));
      // The same token alone, on one thread: the same bits as inside the batch of 23 on two.
      ffn.forward(one, x.data() + size_t(t) * dim, alone.data(), 1);
      REQUIRE(std::memcmp(alone.data(), out.data() + size_t(t) * dim, size_t(dim) * sizeof(float)) == 0);
    }
    // Reordered: token 5 last in a batch of other tokens.
    std::vector<float> mixed = inputs(6, dim, 9);
    mixed.insert(mixed.end(), x.begin() + 5 * dim, x.begin() + 6 * dim);
    std::vector<float> out7(size_t(7) * dim);
    ffn.forward(two, mixed.data(), out7.data(), 7);
    REQUIRE(std::memcmp(out7.data() + 6 * dim, out.data() + 5 * dim, size_t(dim) * sizeof(float)) == 0);
  }
}

TEST_CASE("moe: active parameters count the chosen experts only", "[moe][model]") {
  test::TinyArch m("qwen3moe");
  const LlamaConfig& c = m.file.config;
  const size_t attention = size_t(c.dim) * (c.q_dim() + 2 * c.kv_dim()) + size_t(c.q_dim()) * c.dim;
  const size_t ffn = size_t(c.dim) * c.moe.n_experts + 3 * size_t(c.dim) * c.moe.expert_hidden * c.moe.n_used;
  REQUIRE(m.model.layer_weight_elements() == size_t(c.n_layers) * (attention + ffn));
  // /v1/models' counts: the tied embedding once, then the layers; all experts, or the n_used of one token.
  const int64_t embedding = int64_t(c.vocab_size) * c.dim;
  REQUIRE(c.parameter_count(true) == embedding + int64_t(m.model.layer_weight_elements()));
  REQUIRE(c.parameter_count(false) - c.parameter_count(true) ==
          int64_t(c.n_layers) * 3 * c.dim * c.moe.expert_hidden * (c.moe.n_experts - c.moe.n_used));
  // Qwen3-30B-A3B's shape: 30.5B parameters, 3.3B active (its model card's figures).
  LlamaConfig q = c;
  q.dim = 2048, q.n_layers = 48, q.n_heads = 32, q.n_kv_heads = 4, q.head_size = 128, q.vocab_size = 151936;
  q.tied_output = false, q.moe.n_experts = 128, q.moe.n_used = 8, q.moe.expert_hidden = 768;
  CHECK(q.parameter_count(false) == Approx(30.5e9).epsilon(0.01));
  CHECK(q.parameter_count(true) == Approx(3.3e9).epsilon(0.02));
}

TEST_CASE("moe files: a fused ffn_gate_up_exps loads as the separate gate and up tensors do", "[moe][gguf]") {
  // llama.cpp's fused layout: per expert, its gate rows then its up rows, [n_embd, 2 * n_ff_exp, n_expert].
  parley_test::TempDir tmp;
  const std::string split = tmp / "split.gguf", fused = tmp / "fused.gguf";
  write_model_gguf(test::tiny_model("qwen3moe"), split, GgmlType::F32);
  const GgufFile f(split);
  const ModelFile want = load_model_file(split);
  const LlamaConfig& c = want.config;
  const size_t rows = size_t(c.moe.expert_hidden) * size_t(c.dim);  // one expert's gate (or up) floats
  parley_test::rewrite(
      split, fused,
      [&](GgufWriter& w) {
        for (int l = 0; l < c.n_layers; ++l) {
          const std::string b = "blk." + std::to_string(l) + ".";
          const auto* gate = reinterpret_cast<const float*>(f.tensor(b + "ffn_gate_exps.weight").data);
          const auto* up = reinterpret_cast<const float*>(f.tensor(b + "ffn_up_exps.weight").data);
          std::vector<float> both;
          for (int e = 0; e < c.moe.n_experts; ++e) {
            both.insert(both.end(), gate + e * rows, gate + (e + 1) * rows);
            both.insert(both.end(), up + e * rows, up + (e + 1) * rows);
          }
          w.add_tensor(b + "ffn_gate_up_exps.weight",
                       {uint64_t(c.dim), 2 * uint64_t(c.moe.expert_hidden), uint64_t(c.moe.n_experts)}, GgmlType::F32,
                       both.data());
        }
      },
      [](const GgufTensorInfo& t) {
        return t.name.find("ffn_gate_exps") == std::string::npos && t.name.find("ffn_up_exps") == std::string::npos;
      });
  const ModelFile got = load_model_file(fused);
  for (int l = 0; l < c.n_layers; ++l) {
    CAPTURE(l);
    REQUIRE(got.weights.layers[size_t(l)].experts.gate == want.weights.layers[size_t(l)].experts.gate);
    REQUIRE(got.weights.layers[size_t(l)].experts.up == want.weights.layers[size_t(l)].experts.up);
  }
}

TEST_CASE("a file whose weights do not fit the free memory is refused with both sizes", "[moe][gguf]") {
  REQUIRE_THROWS_WITH(check_fits_memory("big.gguf", 20ull << 30, 16ull << 30),
                      "model file 'big.gguf': its weights need 20.00 GiB of memory and 16.00 GiB is available "
                      "(MemAvailable): free memory or pick a smaller quantization");
  REQUIRE_NOTHROW(check_fits_memory("big.gguf", 16ull << 30, 16ull << 30));
  REQUIRE_NOTHROW(check_fits_memory("big.gguf", 20ull << 30, 0));  // unknown: not checked
  REQUIRE(available_memory() > (64ull << 20));                     // this machine's /proc/meminfo is read
}

TEST_CASE("moe files: inconsistent experts, a bad count, an unknown gating function, truncation refused by name",
          "[moe][gguf]") {
  parley_test::TempDir tmp;
  const std::string good = tmp / "qwen3moe.gguf", bad = tmp / "bad.gguf";
  write_model_gguf(test::tiny_model("qwen3moe"), good, GgmlType::F32);
  parley_test::rewrite(good, bad, [](GgufWriter& w) { w.set_u32("qwen3moe.expert_used_count", 9); });
  REQUIRE_THROWS_WITH(load_model_file(bad),
                      Catch::Contains("'qwen3moe.expert_used_count' = 9 is more than expert_count = 8"));
  parley_test::rewrite(good, bad, [](GgufWriter& w) { w.set_u32("qwen3moe.expert_gating_func", 2); });
  REQUIRE_THROWS_WITH(load_model_file(bad), Catch::Contains("'qwen3moe.expert_gating_func' = 2 is a gating function"));
  parley_test::rewrite(good, bad, [](GgufWriter& w) { w.set_u32("qwen3moe.expert_count", 0); });
  REQUIRE_THROWS_WITH(load_model_file(bad), Catch::Contains("'qwen3moe.expert_count' is required for qwen3moe"));
  // One expert tensor of a different width than the others.
  parley_test::rewrite(
      good, bad,
      [](GgufWriter& w) {
        const std::vector<float> zeros(64 * 16 * 8);
        w.add_tensor("blk.1.ffn_up_exps.weight", {64, 16, 8}, GgmlType::F32, zeros.data());
      },
      [](const GgufTensorInfo& t) { return t.name != "blk.1.ffn_up_exps.weight"; });
  REQUIRE_THROWS_WITH(load_model_file(bad),
                      Catch::Contains("shape mismatch for tensor 'blk.1.ffn_up_exps.weight': expected [64, 32, 8]"));
  // The file cut inside the last expert tensor.
  const auto size = std::filesystem::file_size(good);
  std::filesystem::copy_file(good, bad, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(bad, size - 4096);
  REQUIRE_THROWS_WITH(load_model_file(bad), Catch::Contains("truncated: data of tensor 'blk.2.ffn_up_exps.weight'"));
}

}  // namespace parley
