// The BERT-family encoders (bert, nomic-bert) through the engine: their GGUF keys and tensors round-trip, a
// sequence is computed whole (never chunked, never from the prefix cache) and its vector is bit-identical alone and
// in any batch; a forward pass refuses a partial sequence. llama.cpp's vectors are the e2e test's (embeddings.mjs).
#include <catch2/catch.hpp>

#include "engine/engine_core.hpp"
#include "model/convert.hpp"
#include "model/model_file.hpp"
#include "model/model_shapes.hpp"
#include "model/random_model.hpp"
#include "tests/pooling_test_util.hpp"
#include "tests/test_support.hpp"

using namespace parley;
using pooling_test::normed_hidden;
using pooling_test::pooling_request;
using pooling_test::prompt_of;
using pooling_test::run;
using pooling_test::same_bits;
using pooling_test::scheduler_config;

namespace {

struct Encoder : pooling_test::Model {
  explicit Encoder(const std::string& arch) : Model(arch, PoolingType::Mean, 9) {}
};

SchedulerConfig encoder_scheduler(int budget) {
  SchedulerConfig c = scheduler_config(PoolingType::Mean, budget);
  c.bidirectional = true;
  c.enable_prefix_caching = false;
  return c;
}

}  // namespace

TEST_CASE("an encoder round-trips through GGUF: its keys, LayerNorms, biases, token type and positions",
          "[encoder][gguf]") {
  test::TempDir tmp;
  for (const char* arch : {"bert", "nomic-bert"}) {
    INFO(arch);
    const ModelFile m = make_random_model(pooling_test::Model::config_of(arch, PoolingType::Cls), 4);
    write_model_gguf(m, tmp / "enc.gguf", quant::GgmlType::F32);
    const ModelFile back = load_model_file(tmp / "enc.gguf");
    const LlamaConfig& c = back.config;
    CHECK(c.encoder);
    CHECK(c.learned_positions == (std::string(arch) == "bert"));
    CHECK(c.ffn_bias == (std::string(arch) == "bert"));
    CHECK(c.activation == (std::string(arch) == "bert" ? FfnActivation::Gelu : FfnActivation::Silu));
    CHECK(c.norm_eps == 1e-12f);
    CHECK(c.pooling == PoolingType::Cls);
    CHECK(back.weights.output_norm.empty());
    CHECK(back.weights.token_type == m.weights.token_type);
    CHECK(back.weights.embedding_norm.bias == m.weights.embedding_norm.bias);
    CHECK(back.weights.layers[1].layer_out_norm.bias == m.weights.layers[1].layer_out_norm.bias);
    CHECK(back.weights.layers[2].b_up == m.weights.layers[2].b_up);
    CHECK(back.weights.position_embedding.to_f32() == m.weights.position_embedding.to_f32());
  }
}

TEST_CASE("an encoder's token sees the tokens after it, and a forward pass needs each sequence whole", "[encoder]") {
  Encoder m("bert");
  const std::vector<int> prompt = prompt_of(20, 3);
  std::vector<int> changed = prompt;
  changed.back() = prompt.back() % 400 + 7;
  // Bidirectional: the first token's state changes with the last token (a causal model's would not).
  CHECK_FALSE(same_bits(normed_hidden(m.model, prompt, {0}), normed_hidden(m.model, changed, {0})));
  KvCache kv(m.file.config, 8, 16);
  ForwardBatch b;
  b.max_blocks_per_seq = 8;
  for (int i = 0; i < 8; ++i) b.block_tables.push_back(i);
  b.token_ids = {5, 6};
  b.positions = {3, 4};  // a chunk that starts mid-sequence
  b.token_seq = {0, 0};
  b.slot_mapping = {3, 4};
  std::vector<float> logits;
  CHECK(test::error_of([&] { m.model.forward(b, kv, logits); }) ==
        "forward: an encoder needs each sequence whole in one step (token 0 is at position 3)");
}

TEST_CASE("an encoder's vector is bit-identical alone and in any batch, each input computed whole",
          "[encoder][invariance]") {
  for (const char* arch : {"bert", "nomic-bert"}) {
    INFO(arch);
    Encoder m(arch);
    const std::vector<int> lengths{5, 16, 17, 40, 63};
    std::map<std::string, std::vector<float>> alone;
    for (size_t i = 0; i < lengths.size(); ++i) {
      EngineCore core(m.model, encoder_scheduler(512));
      const std::string id = "e" + std::to_string(i);
      alone[id] = run(core, {pooling_request(id, prompt_of(lengths[i], int(i)))}).at(id);
    }
    for (int budget : {512, 64, 70}) {  // one step, or as many whole inputs as fit
      for (bool async : {false, true}) {
        INFO("budget " << budget << ", async " << async);
        EngineCore core(m.model, encoder_scheduler(budget), async);
        std::vector<Request> batch;
        for (size_t i = 0; i < lengths.size(); ++i)
          batch.push_back(pooling_request("e" + std::to_string(i), prompt_of(lengths[i], int(i))));
        const auto together = run(core, std::move(batch));
        REQUIRE(together.size() == alone.size());
        for (const auto& [id, v] : alone) CHECK(same_bits(together.at(id), v));
        // Every prompt token computed once: no chunk recomputed, no prefix read.
        CHECK(core.scheduler().stats().prefill_tokens_computed == 141);
        CHECK(core.scheduler().kv_cache_manager().block_pool().num_used() == 0);
      }
    }
  }
}

TEST_CASE("an encoder refuses an input longer than a step holds, and the same input twice reads no prefix",
          "[encoder]") {
  Encoder m("nomic-bert");
  EngineCore core(m.model, encoder_scheduler(32));
  CHECK(test::error_of([&] { core.add_request(pooling_request("long", prompt_of(33, 1))); }) ==
        "the input has 33 tokens; this model reads an input whole in one step, which holds 32 "
        "(--max-num-batched-tokens)");
  SchedulerConfig caching = encoder_scheduler(32);
  caching.enable_prefix_caching = true;
  CHECK(test::error_of([&] { caching.validate(); }) == "a bidirectional model cannot cache prefixes");
  const auto first = run(core, {pooling_request("a", prompt_of(32, 2))});
  const auto again = run(core, {pooling_request("b", prompt_of(32, 2))});
  CHECK(same_bits(first.at("a"), again.at("b")));
  CHECK(core.scheduler().stats().prefix_cache_hits == 0);
  CHECK(core.scheduler().stats().prefill_tokens_computed == 64);
}
