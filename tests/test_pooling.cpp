// Pooling (embeddings) on the decoder architectures: which positions each type reads, the pool itself, the served
// pooling chosen from --task and the file, and pooling requests through EngineCore: the vector is the model's
// final-normed hidden states pooled, bit-identical alone, in any batch and chunked or not, and its KV is freed.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include "engine/engine_core.hpp"
#include "engine/pooler.hpp"
#include "model/model_shapes.hpp"
#include "model/random_model.hpp"
#include "tests/pooling_test_util.hpp"
#include "tests/test_support.hpp"

using namespace parley;

namespace {

// A tiny random qwen3 (QK-norm, GQA) that pools as `type`.
struct PoolingModel : pooling_test::Model {
  explicit PoolingModel(PoolingType type) : Model("qwen3", type) {}
};

using pooling_test::normed_hidden;
using pooling_test::pooling_request;
using pooling_test::prompt_of;
using pooling_test::run;
using pooling_test::same_bits;
using pooling_test::scheduler_config;

}  // namespace

TEST_CASE("each pooling type reads its positions of a chunk", "[pooling]") {
  CHECK(pooled_range(PoolingType::Mean, 16, 32, 40).first == 16);
  CHECK(pooled_range(PoolingType::Mean, 16, 32, 40).last == 32);
  CHECK(pooled_range(PoolingType::Cls, 0, 16, 40).size() == 1);
  CHECK(pooled_range(PoolingType::Cls, 16, 32, 40).size() == 0);
  CHECK(pooled_range(PoolingType::Last, 16, 32, 40).size() == 0);
  CHECK(pooled_range(PoolingType::Last, 32, 40, 40).first == 39);
  CHECK(pooled_range(PoolingType::Last, 32, 40, 40).last == 40);
  CHECK_THROWS_AS(pooled_range(PoolingType::Rank, 0, 4, 4), std::invalid_argument);
}

TEST_CASE("a mean pool fed in chunks is the mean, and a vector is cut to its dimensions before normalizing",
          "[pooling]") {
  PooledSequence mean(PoolingType::Mean, 2, 3, PoolingParams{0, false});
  mean.add(0, std::vector<float>{1, 2, 3, 4});
  CHECK_FALSE(mean.complete());
  CHECK_THROWS_AS(mean.add(0, std::vector<float>{5, 6}), std::logic_error);  // position 0 again
  mean.add(2, std::vector<float>{5, 9});
  CHECK(mean.finish() == std::vector<float>{3, 5});

  std::vector<float> v{3, 4, 12};
  finish_embedding(v, PoolingParams{2, true});
  CHECK(v == std::vector<float>{0.6f, 0.8f});
  std::vector<float> raw{3, 4, 12};
  finish_embedding(raw, PoolingParams{0, false});
  CHECK(raw == std::vector<float>{3, 4, 12});
}

TEST_CASE("task auto embeds when the file or the pooling flag names a pooling type", "[pooling]") {
  CHECK(served_pooling(EngineTask::Auto, std::nullopt, PoolingType::None) == PoolingType::None);
  CHECK(served_pooling(EngineTask::Auto, std::nullopt, PoolingType::Last) == PoolingType::Last);
  CHECK(served_pooling(EngineTask::Auto, PoolingType::Mean, PoolingType::None) == PoolingType::Mean);
  CHECK(served_pooling(EngineTask::Generate, std::nullopt, PoolingType::Last) == PoolingType::None);
  CHECK(served_pooling(EngineTask::Embed, PoolingType::Cls, PoolingType::Last) == PoolingType::Cls);
  CHECK(test::error_of([] { served_pooling(EngineTask::Embed, std::nullopt, PoolingType::None); }) ==
        "--task embed needs a pooling type: the model file names none (--pooling mean|cls|last)");
  CHECK_THROWS_AS(served_pooling(EngineTask::Embed, std::nullopt, PoolingType::Rank), std::invalid_argument);
}

TEST_CASE("a pooling request's vector is the pooled final-normed hidden states of one forward pass", "[pooling]") {
  const std::vector<int> prompt = prompt_of(37, 1);
  for (PoolingType type : {PoolingType::Mean, PoolingType::Cls, PoolingType::Last}) {
    INFO("pooling " << int(type));
    PoolingModel m(type);
    const std::vector<float> h = normed_hidden(m.model, prompt);
    const int dim = m.file.config.dim, n = int(prompt.size());
    std::vector<float> want(static_cast<size_t>(dim));
    for (int d = 0; d < dim; ++d) {
      if (type == PoolingType::Mean) {
        double sum = 0.0;
        for (int p = 0; p < n; ++p) sum += h[size_t(p) * dim + d];
        want[size_t(d)] = float(sum / n);
      } else {
        want[size_t(d)] = h[size_t(type == PoolingType::Cls ? 0 : n - 1) * dim + d];
      }
    }
    EngineCore core(m.model, scheduler_config(type, 16));  // chunks of 16: 3 steps
    auto got = run(core, {pooling_request("a", prompt, PoolingParams{0, false})});
    CHECK(same_bits(got.at("a"), want));
    CHECK(core.scheduler().stats().prefill_tokens_computed == n);
  }
}

TEST_CASE("an embedding is bit-identical alone, in a batch with generations and chunked", "[pooling][invariance]") {
  for (PoolingType type : {PoolingType::Mean, PoolingType::Cls, PoolingType::Last}) {
    INFO("pooling " << int(type));
    PoolingModel m(type);
    const std::vector<int> lengths{5, 16, 17, 40, 63};
    std::map<std::string, std::vector<float>> alone;
    for (size_t i = 0; i < lengths.size(); ++i) {
      EngineCore core(m.model, scheduler_config(type));
      const std::string id = "e" + std::to_string(i);
      alone[id] = run(core, {pooling_request(id, prompt_of(lengths[i], int(i)))}).at(id);
      double norm = 0.0;
      for (float x : alone[id]) norm += double(x) * x;
      CHECK(std::abs(norm - 1.0) < 1e-5);  // normalized by default
    }
    for (int budget : {512, 7, 16}) {  // one step, and chunked prefills sharing the budget
      for (bool async : {false, true}) {
        INFO("budget " << budget << ", async " << async);
        EngineCore core(m.model, scheduler_config(type, budget), async);
        std::vector<Request> batch;
        for (size_t i = 0; i < lengths.size(); ++i) {
          SamplingParams gen;
          gen.max_tokens = 5;
          gen.temperature = 0.0f;
          batch.emplace_back("g" + std::to_string(i), prompt_of(9 + int(i), 50 + int(i)), gen, 7);
          batch.push_back(pooling_request("e" + std::to_string(i), prompt_of(lengths[i], int(i))));
        }
        const auto together = run(core, std::move(batch));
        REQUIRE(together.size() == alone.size());
        for (const auto& [id, v] : alone) CHECK(same_bits(together.at(id), v));
        CHECK(core.scheduler().kv_cache_manager().block_pool().num_used() == 0);
      }
    }
  }
}

TEST_CASE("a pooling request holds only its prompt's blocks and frees them when its vector is out", "[pooling]") {
  PoolingModel m(PoolingType::Last);
  EngineCore core(m.model, scheduler_config(PoolingType::Last));
  core.add_request(pooling_request("a", prompt_of(40, 3)));
  const auto outputs = core.step();
  REQUIRE(outputs.size() == 1);
  CHECK(outputs[0].pooled.size() == size_t(m.file.config.dim));
  CHECK(core.scheduler().stats().peak_used_blocks == 3);  // 40 tokens in blocks of 16, nothing for an output
  CHECK(core.scheduler().kv_cache_manager().block_pool().num_used() == 0);
  CHECK_FALSE(core.has_unfinished_requests());
}

TEST_CASE("last-token pooling reads cached prefixes and mean pooling recomputes every token", "[pooling]") {
  for (PoolingType type : {PoolingType::Last, PoolingType::Mean}) {
    PoolingModel m(type);
    EngineCore core(m.model, scheduler_config(type));
    const auto first = run(core, {pooling_request("a", prompt_of(40, 3))});
    const auto again = run(core, {pooling_request("b", prompt_of(40, 3))});
    CHECK(same_bits(first.at("a"), again.at("b")));
    CHECK(core.scheduler().stats().prefix_cache_hits == (type == PoolingType::Last ? 32 : 0));
  }
}

TEST_CASE("a pooling prompt may fill the context, and an engine that does not pool refuses pooling requests",
          "[pooling]") {
  PoolingModel m(PoolingType::Mean);
  SchedulerConfig c = scheduler_config(PoolingType::Mean);
  c.max_model_len = 48;
  EngineCore core(m.model, c);
  CHECK(run(core, {pooling_request("full", prompt_of(48, 2))}).count("full") == 1);
  CHECK_THROWS_AS(core.add_request(pooling_request("over", prompt_of(49, 2))), std::invalid_argument);

  EngineCore generating(m.model, scheduler_config(PoolingType::None));
  CHECK(test::error_of([&] { generating.add_request(pooling_request("x", prompt_of(8, 2))); }) ==
        "this model does not pool (a pooling type and --task embed are needed)");
}
