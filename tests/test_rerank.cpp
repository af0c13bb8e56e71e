// Reranking (llama.cpp's RANK pooling, Qwen3-Reranker's form): the classifier head's arithmetic, the GGUF keys and
// tensors it round-trips through, the served task chosen from --task and the file, and score requests through
// EngineCore: the score is the head over the last token's final-normed hidden state, bit-identical alone and in a
// batch; a last-token head reads cached prefixes (a first-token one recomputes); an engine refuses the other task's
// requests.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>

#include "engine/engine_core.hpp"
#include "engine/pooler.hpp"
#include "model/convert.hpp"
#include "model/model_file.hpp"
#include "model/model_shapes.hpp"
#include "model/random_model.hpp"
#include "tests/pooling_test_util.hpp"
#include "tests/test_support.hpp"

using namespace parley;

namespace {

LlamaConfig reranker_config(const std::string& arch = "qwen3") {
  LlamaConfig c = tiny_arch_shape(arch).config;
  c.pooling = PoolingType::Rank;
  c.classifier_labels = {"yes", "no"};
  return c;
}

struct Reranker {
  explicit Reranker(const std::string& arch = "qwen3")
      : file(make_random_model(reranker_config(arch), 5)), backend(1), model(file.config, file.weights, backend) {}
  ModelFile file;
  cpu::CpuBackend backend;
  LlamaModel model;
};

using pooling_test::normed_hidden;
using pooling_test::prompt_of;
using pooling_test::run;
using pooling_test::scheduler_config;

Request score_request(const std::string& id, std::vector<int> prompt) {
  Request r(id, std::move(prompt), SamplingParams{}, 0);
  r.pooling_params.emplace().task = PoolingTask::Score;
  return r;
}

}  // namespace

TEST_CASE("the classifier head is cls_out times the state plus its bias, softmaxed for qwen3, sigmoid for one label",
          "[rerank]") {
  ClassifierHead h;
  h.dim = 2, h.n_out = 2;
  h.weight = {1.0f, 0.0f, 0.5f, 1.0f};
  h.bias = {0.0f, -1.0f};
  CHECK(h.apply(std::vector<float>{2.0f, 1.0f}) == std::vector<float>{2.0f, 1.0f});  // [2, 1 + 1 - 1]
  h.normalize = ClassifierHead::Normalize::Softmax;
  const std::vector<float> p = h.apply(std::vector<float>{2.0f, 1.0f});
  CHECK(p[0] == Approx(1.0 / (1.0 + std::exp(-1.0))).epsilon(1e-6));
  CHECK(p[0] + p[1] == Approx(1.0).epsilon(1e-6));
  CHECK_THROWS_AS(h.apply(std::vector<float>{1.0f}), std::logic_error);
  // A cross-encoder: tanh(dense x + b) first, then one logit through a sigmoid.
  ClassifierHead cross;
  cross.dim = 2, cross.n_out = 1;
  cross.dense = {1.0f, 1.0f, 0.0f, -1.0f};
  cross.dense_bias = {0.0f, 0.5f};
  cross.weight = {2.0f, 1.0f};
  cross.bias = {-0.25f};
  cross.normalize = ClassifierHead::Normalize::Sigmoid;
  const double z = 2.0 * std::tanh(3.0) + std::tanh(-0.5) - 0.25;  // x = [2, 1]: dense gives [3, -1 + 0.5]
  CHECK(cross.apply(std::vector<float>{2.0f, 1.0f})[0] == Approx(1.0 / (1.0 + std::exp(-z))).epsilon(1e-6));
}

TEST_CASE("a qwen3 file's head reads the last token and softmaxes, and a file without cls.output has none",
          "[rerank]") {
  const ModelFile m = make_random_model(reranker_config(), 5);
  const auto head = ClassifierHead::from(m.config, m.weights);
  REQUIRE(head);
  CHECK(head->n_out == 2);
  CHECK(head->dim == m.config.dim);
  CHECK(head->reads_last);
  CHECK(head->normalize == ClassifierHead::Normalize::Softmax);
  CHECK(pooled_positions(PoolingType::Rank, &*head) == PoolingType::Last);
  CHECK(pooled_positions(PoolingType::Mean, nullptr) == PoolingType::Mean);
  CHECK_THROWS_AS(pooled_positions(PoolingType::Rank, nullptr), std::invalid_argument);
  LlamaConfig plain = tiny_arch_shape("qwen3").config;
  CHECK_FALSE(ClassifierHead::from(plain, make_random_model(plain, 5).weights));
}

TEST_CASE("a reranker round-trips through GGUF: pooling type, labels, cls.output.weight and its bias",
          "[rerank][gguf]") {
  test::TempDir tmp;
  ModelFile m = make_random_model(reranker_config(), 5);
  m.weights.cls_out_bias = {0.25f, -0.5f};
  write_model_gguf(m, tmp / "rank.gguf", quant::GgmlType::F32);
  const ModelFile back = load_model_file(tmp / "rank.gguf");
  CHECK(back.config.pooling == PoolingType::Rank);
  CHECK(back.config.classifier_labels == std::vector<std::string>{"yes", "no"});
  CHECK(back.weights.cls_out.to_f32() == m.weights.cls_out.to_f32());
  CHECK(back.weights.cls_out_bias == m.weights.cls_out_bias);
}

TEST_CASE("task auto reranks a rank file, rerank needs one and embed refuses one", "[rerank]") {
  CHECK(served_pooling(EngineTask::Auto, std::nullopt, PoolingType::Rank) == PoolingType::Rank);
  CHECK(served_pooling(EngineTask::Rerank, std::nullopt, PoolingType::Rank) == PoolingType::Rank);
  CHECK(served_pooling(EngineTask::Embed, PoolingType::Last, PoolingType::Rank) == PoolingType::Last);
  CHECK(test::error_of([] { served_pooling(EngineTask::Rerank, std::nullopt, PoolingType::Last); }) ==
        "--task rerank needs a reranker: the model file's pooling type is not rank");
  CHECK(test::error_of([] { served_pooling(EngineTask::Embed, std::nullopt, PoolingType::Rank); }) ==
        "the model pools by rank (a reranker): --task rerank, or --pooling mean|cls|last to embed");
}

TEST_CASE("a score is the head's first output over the last token's final-normed state, alone or in a batch",
          "[rerank][invariance]") {
  Reranker m;
  const std::vector<int> prompt = prompt_of(37, 1);
  const float want = m.model.classifier()->apply(normed_hidden(m.model, prompt, {int(prompt.size()) - 1}))[0];
  EngineCore alone(m.model, scheduler_config(PoolingType::Rank, 16));  // chunks of 16: 3 steps
  const auto one = run(alone, {score_request("a", prompt)});
  REQUIRE(one.at("a").size() == 1);
  CHECK(one.at("a")[0] == want);
  CHECK(want > 0.0f);
  CHECK(want < 1.0f);
  EngineCore batched(m.model, scheduler_config(PoolingType::Rank));
  const auto many = run(
      batched, {score_request("b", prompt_of(5, 2)), score_request("a", prompt), score_request("c", prompt_of(60, 3))});
  CHECK(many.at("a") == one.at("a"));
  CHECK(many.at("b") != many.at("c"));
}

TEST_CASE("a qwen3 reranker's pairs reuse a shared query's cached blocks, a first-token head recomputes them",
          "[rerank][prefix]") {
  for (const std::string arch : {"qwen3", "llama"}) {  // the head reads the last token, or the first
    INFO(arch);
    Reranker m(arch);
    const std::vector<int> query = prompt_of(40, 4);
    auto pair = [&](int seed) {
      std::vector<int> p = query, document = prompt_of(9, seed);
      p.insert(p.end(), document.begin(), document.end());
      return p;
    };
    EngineCore core(m.model, scheduler_config(PoolingType::Rank));
    run(core, {score_request("a", pair(7))});
    const auto second = run(core, {score_request("b", pair(8))});
    CHECK(core.scheduler().stats().prefix_cache_hits == (arch == "qwen3" ? 32 : 0));  // the query's 2 whole blocks
    SchedulerConfig off = scheduler_config(PoolingType::Rank);
    off.enable_prefix_caching = false;
    EngineCore whole(m.model, off);
    CHECK(run(whole, {score_request("b", pair(8))}).at("b") == second.at("b"));
  }
}

TEST_CASE("a reranking engine refuses embedding requests and an embedding engine score requests", "[rerank]") {
  Reranker m;
  EngineCore reranking(m.model, scheduler_config(PoolingType::Rank));
  Request embed("e", prompt_of(4, 1), SamplingParams{}, 0);
  embed.pooling_params = PoolingParams{};
  CHECK(test::error_of([&] { reranking.add_request(std::move(embed)); }) ==
        "this model reranks (--task rerank): it scores, not embeds");
  EngineCore embedding(m.model, scheduler_config(PoolingType::Last));
  CHECK(test::error_of([&] { embedding.add_request(score_request("s", prompt_of(4, 1))); }) ==
        "this model embeds: scores need a reranker (--task rerank)");
}
