// Every architecture's tiny model (`parley gen-model --arch`) through the differential suites: batching, chunked
// prefill, prefix-cache hits, preemption, the n-split, exact speculation and async scheduling each give the token
// ids and logprobs of a plain run, on sequences longer than the sliding windows. Files round-trip through GGUF,
// and broken ones are refused naming what is wrong. (Agreement with llama.cpp: tests/e2e/architectures.mjs.)
#include <catch2/catch.hpp>

#include <cstring>

#include "engine_core_runs.hpp"
#include "model/architecture.hpp"
#include "model/convert.hpp"
#include "model_test_util.hpp"
#include "differential_suite.hpp"
#include "tiny_arch.hpp"

namespace parley {
namespace {

using test::kArchs;
using test::tiny_model;
using test::TinyArch;

std::vector<float> logits_of(LlamaModel& model, const std::vector<int>& tokens) {
  const int bs = 16, nb = int(tokens.size() + bs - 1) / bs;
  KvCache kv(model.config(), nb, bs, KvDtype::F32, KvCacheLayout::single_group(model.config().n_layers));  // one table
  ForwardBatch b;
  b.token_ids = tokens;
  b.max_blocks_per_seq = nb;
  for (int i = 0; i < nb; ++i) b.block_tables.push_back(i);
  for (int p = 0; p < int(tokens.size()); ++p) {
    b.positions.push_back(p);
    b.token_seq.push_back(0);
    b.slot_mapping.push_back(p);
    b.logits_indices.push_back(p);
  }
  std::vector<float> logits;
  model.forward(b, kv, logits);
  return logits;
}

}  // namespace

TEST_CASE("architectures: batching, chunking, prefix hits, preemption, speculation and async change no token",
          "[arch][model]") {
  for (const char* arch : kArchs) {
    CAPTURE(arch);
    TinyArch m(arch);
    test::require_differential_suite(m.model, m.file);
  }
}

TEST_CASE("architectures: a sliding window limits what a local layer sees", "[arch][model]") {
  // Changing a token further back than every window changes the logits of a gemma3 model only through its
  // global layer; with that layer's window made local too, not at all.
  TinyArch m("gemma3");
  std::vector<int> a{1}, b{1};
  for (int i = 0; i < 60; ++i) a.push_back(3 + (i * 37) % 500), b.push_back(a.back());  // past 6 windows of 8
  b[3] = 99;                                                                            // a[3] is 77
  const int vocab = m.file.config.vocab_size;
  auto last = [&](LlamaModel& model, const std::vector<int>& t) {
    const auto logits = logits_of(model, t);
    return std::vector<float>(logits.end() - vocab, logits.end());
  };
  REQUIRE(last(m.model, a) != last(m.model, b));
  LlamaConfig all_local = m.file.config;
  all_local.sliding_window_period = all_local.n_layers + 1;  // every layer slides
  LlamaModel local(all_local, m.file.weights, m.backend);
  REQUIRE(last(local, a) == last(local, b));
}

TEST_CASE("architectures: GGUF files round-trip with the same config, tensors and logits", "[arch][gguf]") {
  parley_test::TempDir tmp;
  for (const char* arch : kArchs) {
    CAPTURE(arch);
    TinyArch m(arch);
    const std::string path = tmp / (std::string(arch) + ".gguf");
    write_model_gguf(m.file, path, GgmlType::F32);
    ModelFile back = load_model_file(path);
    parley_test::require_same_config(back.config, m.file.config);
    parley_test::require_same_weights(back, m.file);
    LlamaModel reloaded(back.config, back.weights, m.backend);
    std::vector<int> tokens{1};
    for (int i = 0; i < 50; ++i) tokens.push_back(3 + (i * 53) % 500);
    const auto want = logits_of(m.model, tokens), got = logits_of(reloaded, tokens);
    REQUIRE(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("architectures: a missing tensor, a wrong shape, an unknown architecture are refused by name",
          "[arch][gguf]") {
  parley_test::TempDir tmp;
  struct Broken {
    const char* arch;
    const char* drop;  // a tensor the architecture needs
  };
  for (const Broken k : {Broken{"qwen2", "blk.2.attn_v.bias"}, Broken{"qwen3", "blk.1.attn_k_norm.weight"},
                         Broken{"gemma2", "blk.0.post_ffw_norm.weight"}, Broken{"gemma3", "blk.5.attn_q_norm.weight"},
                         Broken{"phi3", "rope_factors_short.weight"}}) {
    CAPTURE(k.arch);
    const std::string good = tmp / "good.gguf", bad = tmp / "bad.gguf";
    write_model_gguf(tiny_model(k.arch), good, GgmlType::F32);
    parley_test::rewrite(
        good, bad, [](GgufWriter&) {}, [&](const GgufTensorInfo& t) { return t.name != k.drop; });
    REQUIRE_THROWS_WITH(load_model_file(bad), Catch::Contains(std::string("missing tensor '") + k.drop + "'"));
  }
  const std::string good = tmp / "qwen3.gguf", bad = tmp / "bad.gguf";
  write_model_gguf(tiny_model("qwen3"), good, GgmlType::F32);
  parley_test::rewrite(good, bad, [](GgufWriter& w) {
    w.set_u32("qwen3.attention.key_length", 16);
    w.set_u32("qwen3.attention.value_length", 16);
    w.set_u32("qwen3.rope.dimension_count", 16);
  });
  REQUIRE_THROWS_WITH(load_model_file(bad), Catch::Contains("shape mismatch for tensor 'blk.0.attn_q.weight'"));
  parley_test::rewrite(good, bad, [](GgufWriter& w) { w.set_string("general.architecture", "deepseek2"); });
  REQUIRE_THROWS_WITH(
      load_model_file(bad),
      Catch::Contains("unsupported architecture 'deepseek2' (supported: llama, "
                      "qwen2, qwen3, gemma2, gemma3, phi3, qwen2moe, qwen3moe, gpt-oss, bert, nomic-bert)"));
  parley_test::rewrite(good, bad, [](GgufWriter& w) { w.set_string("qwen3.rope.scaling.type", "dynamic"); });
  REQUIRE_THROWS_WITH(load_model_file(bad), Catch::Contains("RoPE scaling 'dynamic'"));
  REQUIRE_THROWS_WITH(tiny_arch_shape("falcon"), Catch::Contains("unknown architecture 'falcon'"));
}

}  // namespace parley
