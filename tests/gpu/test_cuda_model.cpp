// The model on a GPU end to end: stories260K greedy with F32 weights equals llama2.c's ids; graph replay
// equals eager; a request alone equals the same request batched (batch invariance on one device).
#include <catch2/catch.hpp>

#include "../engine_core_runs.hpp"
#include "model/cuda/cuda_model.hpp"

using namespace parley;

namespace {

std::unique_ptr<DeviceModel> gpu_model(const test::Loaded& m, const SchedulerConfig& c, int max_graph_batch,
                                       int query_len = 1, const std::string& dtype = "float32") {
  cuda::CudaModelOptions o;
  o.dtype = dtype;
  o.model = test::device_options(c, max_graph_batch, query_len);
  return cuda::make_model(m.file.config, m.file.weights, o);
}

}  // namespace

TEST_CASE("stories260K greedy on the GPU with F32 weights equals run.c, graphs on and off", "[gpu]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const SchedulerConfig c = test::model_scheduler_config(m, 64);
  for (int graphs : {0, 16}) {
    const auto reqs = test::greedy_reference_requests();
    const auto refs = test::greedy_references();
    const auto run = test::run_core(gpu_model(m, c, graphs), reqs, c, false);
    INFO("graphs up to " << graphs);
    for (size_t i = 0; i < refs.size(); ++i) REQUIRE(run.tokens.at("r" + std::to_string(i)) == refs[i].output_ids);
    REQUIRE((run.stats.num_graph_replays > 0) == (graphs > 0));
  }
}

TEST_CASE("GPU graph replay equals eager, and a request alone equals it batched", "[gpu]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const auto reqs = test::mixed_requests(tok, {"Once upon a time", "Lily saw a big", "The cat"});
  for (const std::string dtype : {"float32", "bfloat16"}) {
    INFO("dtype " << dtype);
    SchedulerConfig c = test::model_scheduler_config(m, 12);  // preempts
    c.max_num_batched_tokens = 64;
    const auto eager = test::run_core(gpu_model(m, c, 0, 1, dtype), reqs, c, false);
    const auto graphs = test::run_core(gpu_model(m, c, 4, 1, dtype), reqs, c, true);
    REQUIRE(graphs.tokens == eager.tokens);
    REQUIRE(graphs.finish == eager.finish);
    REQUIRE(graphs.stats.num_graph_replays > 10);
    for (const Request& r : reqs) {
      if (r.sampling_params.n > 1) continue;
      const auto alone = test::run_core(gpu_model(m, c, 4, 1, dtype), {r}, c, false);
      REQUIRE(alone.tokens.at(r.request_id) == eager.tokens.at(r.request_id));
    }
  }
  SchedulerConfig c = test::model_scheduler_config(m, 64);
  const auto spec =
      SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 2})");
  const auto off = test::run_core(gpu_model(m, c, 0), reqs, c, false);
  const auto on = test::run_core(gpu_model(m, with_speculation(c, spec), 16, 3), reqs, c, false, spec);
  REQUIRE(on.tokens == off.tokens);
  REQUIRE(on.stats.num_graph_replays == on.stats.num_uniform_decode_steps);
}
