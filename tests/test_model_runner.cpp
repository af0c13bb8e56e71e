// The model runner on the real stories260K model, driven by hand-built SchedulerOutputs: the llama2.c
// greedy reference, chunked prefill, batch company, holes and condensing, preemption and resumption
//, and the errors it raises for a SchedulerOutput it cannot follow.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/engine_core_runs.hpp"
#include "tests/runner_driver.hpp"
#include "tests/test_support.hpp"

using namespace parley;
using namespace parley::test;

namespace {

constexpr int kBlockSize = 16;
constexpr int kNumBlocks = 256;

Loaded& stories() {
  static Loaded m(shared_model("stories260K.bin"), shared_model("tok512.bin"));
  return m;
}

std::vector<int> stop_ids() { return default_stop_token_ids(*stories().file.vocab); }

ModelRunner make_runner(int max_num_seqs = 8) {
  return ModelRunner(stories().model, kNumBlocks, kBlockSize, max_num_seqs, stop_ids());
}

// Seeded sampling that exercises every processing step the runner's batch carries.
std::vector<SamplingParams> varied_params() {
  std::vector<SamplingParams> ps(5);
  ps[0].temperature = 0.9f, ps[0].top_k = 20, ps[0].logit_bias = {{261, -4.0f}, {267, 3.0f}};
  ps[1].temperature = 0.8f, ps[1].top_p = 0.9f, ps[1].presence_penalty = 0.6f, ps[1].logprobs = 3;
  ps[2].temperature = 0.0f, ps[2].repetition_penalty = 1.3f, ps[2].frequency_penalty = 0.4f;
  ps[3].temperature = 1.1f, ps[3].min_p = 0.05f, ps[3].min_tokens = 20, ps[3].stop_token_ids = {279};
  ps[4].temperature = 0.7f, ps[4].stop_token_ids = {261}, ps[4].logprobs = 0;
  for (auto& p : ps) p.max_tokens = 40;
  return ps;
}

std::vector<std::vector<int>> varied_prompts() {
  return {{1, 403, 407, 261, 378}, {1, 54, 279}, {1, 80, 280, 338, 310, 270, 99}, {1, 345}, {1, 61, 303, 264, 296}};
}

// Each request run alone in a fresh runner: the reference for every batch composition.
std::vector<LiveRequest> run_alone(std::vector<SamplingParams> ps = varied_params()) {
  const auto prompts = varied_prompts();
  std::vector<LiveRequest> out;
  for (size_t i = 0; i < ps.size(); ++i) {
    ModelRunner runner = make_runner();
    RunnerDriver d(runner, kBlockSize, kNumBlocks, stop_ids());
    d.add("r" + std::to_string(i), prompts[i], ps[i], 1000 + i);
    d.run_to_completion();
    out.push_back(d.request("r" + std::to_string(i)));
  }
  return out;
}

void require_same_run(const LiveRequest& got, const LiveRequest& want) {
  INFO(want.id);
  REQUIRE(got.output == want.output);
  REQUIRE(got.logprobs.size() == want.logprobs.size());
  for (size_t i = 0; i < got.logprobs.size(); ++i) {
    REQUIRE(got.logprobs[i].token == want.logprobs[i].token);
    REQUIRE(got.logprobs[i].logprob == want.logprobs[i].logprob);  // bit-identical: kernels are batch-invariant
    REQUIRE(got.logprobs[i].rank == want.logprobs[i].rank);
    REQUIRE(got.logprobs[i].top == want.logprobs[i].top);
  }
}

}  // namespace

TEST_CASE("greedy runner tokens equal llama2.c's, all references in one batch", "[model_runner]") {
  for (int chunk : {1 << 30, 3}) {
    INFO("prefill chunk " << chunk);
    ModelRunner runner = make_runner();
    RunnerDriver d(runner, kBlockSize, kNumBlocks, stop_ids());
    d.chunk = chunk;
    const auto refs = greedy_references();
    for (const Request& r : greedy_reference_requests()) d.add(r.request_id, r.prompt_token_ids, r.sampling_params, 0);
    d.run_to_completion();
    for (size_t i = 0; i < refs.size(); ++i) REQUIRE(d.output("r" + std::to_string(i)) == refs[i].output_ids);
    REQUIRE(d.num_free_blocks() == kNumBlocks);
    REQUIRE(runner.input_batch().num_reqs() == 0);
    REQUIRE(runner.input_batch().req_ids().empty());
  }
}

TEST_CASE("seeded runner tokens equal the offline engine's", "[model_runner]") {
  Loaded& m = stories();
  std::vector<GenerationRequest> reqs;
  ModelRunner runner = make_runner();
  RunnerDriver d(runner, kBlockSize, kNumBlocks, stop_ids());
  const auto prompts = varied_prompts();
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerationRequest g{prompts[i], {}};
    g.params.temperature = 0.6f + 0.2f * float(i);
    g.params.top_p = 0.95f;
    g.params.seed = 77 + i;
    g.params.max_tokens = 50;
    reqs.push_back(g);
    d.add("g" + std::to_string(i), g.prompt_token_ids, g.params, *g.params.seed);
  }
  const auto offline = OfflineEngine(m.model, m.engine_options()).generate(reqs);
  d.run_to_completion();
  for (size_t i = 0; i < reqs.size(); ++i) REQUIRE(d.output("g" + std::to_string(i)) == offline[i].output_token_ids);
}

TEST_CASE("batch company, chunked prefill, late arrivals, aborts and condensing leave tokens unchanged",
          "[model_runner]") {
  const auto alone = run_alone();
  // Each processing step changes its request's tokens: the runner really applies them.
  auto plain = varied_params();
  plain[0].logit_bias = {}, plain[1].presence_penalty = 0, plain[2].repetition_penalty = 1, plain[3].min_tokens = 0;
  const auto unprocessed = run_alone(plain);
  for (int i = 0; i < 3; ++i) REQUIRE(unprocessed[i].output != alone[i].output);
  REQUIRE(unprocessed[3].output.size() < 20);  // stops on 279 early without min_tokens
  REQUIRE(unprocessed[3].output.back() == 279);
  REQUIRE(alone[3].output.size() >= 20);
  REQUIRE(alone[4].output.size() < 40);  // stopped by its stop token
  REQUIRE(alone[4].output.back() == 261);
  REQUIRE(alone[1].logprobs.size() == alone[1].output.size());
  REQUIRE(alone[1].logprobs[0].top.size() == 3);
  REQUIRE(alone[4].logprobs[0].top.empty());
  for (int chunk : {1 << 30, 2}) {
    INFO("prefill chunk " << chunk);
    ModelRunner runner = make_runner();
    RunnerDriver d(runner, kBlockSize, kNumBlocks, stop_ids());
    d.chunk = chunk;
    d.budget = 9;  // mixed prefill and decode steps; later requests sometimes wait
    const auto ps = varied_params();
    const auto prompts = varied_prompts();
    SamplingParams doomed;
    doomed.temperature = 1.0f, doomed.max_tokens = 200, doomed.ignore_eos = true, doomed.frequency_penalty = 1.0f;
    d.add("doomed", {1, 100, 200}, doomed, 5);  // row 0, aborted mid-way: a hole the last row moves into
    for (int i = 0; i < 3; ++i) d.add("r" + std::to_string(i), prompts[i], ps[i], 1000 + i);
    for (int s = 0; s < 6; ++s) d.step();
    d.add("r3", prompts[3], ps[3], 1003);  // arrives mid-way
    d.hold("r1", true);                    // stays in the batch, unscheduled, for three steps
    for (int s = 0; s < 3; ++s) d.step();
    const int64_t rebuilds = runner.input_batch().num_metadata_rebuilds();
    d.hold("r1", false);
    d.step();
    d.step();
    // No request came or went in the last two steps: the metadata was not rebuilt.
    REQUIRE(runner.input_batch().num_metadata_rebuilds() == rebuilds);
    d.abort("doomed");
    const std::string last_row = runner.input_batch().req_ids().back();
    d.step();
    REQUIRE(runner.input_batch().req_ids().front() == last_row);  // condensed into the hole
    REQUIRE(runner.input_batch().num_metadata_rebuilds() == rebuilds + 1);
    d.add("r4", prompts[4], ps[4], 1004);
    d.run_to_completion();
    for (int i = 0; i < 5; ++i) require_same_run(d.request("r" + std::to_string(i)), alone[i]);
    REQUIRE(d.num_free_blocks() == kNumBlocks);
    REQUIRE(runner.input_batch().num_reqs() == 0);
  }
}

TEST_CASE("a preempted request resumes on fresh blocks with the same tokens", "[model_runner]") {
  const auto alone = run_alone();
  for (int victim : {1, 2}) {  // presence penalty with logprobs; greedy with repetition and frequency penalties
    const std::string id = "r" + std::to_string(victim);
    INFO(id);
    ModelRunner runner = make_runner();
    RunnerDriver d(runner, kBlockSize, kNumBlocks, stop_ids());
    const auto ps = varied_params();
    const auto prompts = varied_prompts();
    for (int i = 0; i < 4; ++i) d.add("r" + std::to_string(i), prompts[i], ps[i], 1000 + i);
    for (int s = 0; s < 20; ++s) d.step();
    const std::vector<int> old_blocks = d.request(id).blocks;
    const size_t generated = d.output(id).size();
    REQUIRE(generated >= 19);
    d.preempt(id);
    d.step();
    REQUIRE_FALSE(runner.input_batch().req_index(id));  // dropped with all its state
    d.step();
    d.hold(id, false);
    d.chunk = 5;  // the recompute (prompt and output) is itself chunked
    d.step();
    const auto row = runner.input_batch().req_index(id);
    REQUIRE(row);
    REQUIRE(int(runner.input_batch().output_token_ids(*row).size()) == int(generated));
    REQUIRE(d.request(id).blocks != old_blocks);
    d.run_to_completion();
    for (int i = 0; i < 4; ++i) require_same_run(d.request("r" + std::to_string(i)), alone[i]);
  }
}

TEST_CASE("the runner refuses a SchedulerOutput it cannot follow", "[model_runner]") {
  ModelRunner runner = make_runner(2);
  SamplingParams p;
  p.temperature = 0.0f;
  SchedulerOutput first;
  first.scheduled_new_reqs.push_back({"a", {1, 403, 407}, {}, p, 0, GroupBlockIds{{0}}, 0, {}});
  first.num_scheduled_tokens = {{"a", 3}};
  first.total_num_scheduled_tokens = 3;
  first.finished_req_ids = {"never-seen"};  // aborted before it reached the worker: skipped
  const ModelRunnerOutput out = runner.execute_model(first);
  REQUIRE(out.num_entries() == 1);
  REQUIRE(out.sampled(0).size() == 1);
  REQUIRE(out.logprobs.empty());  // none asked

  auto fails = [&](auto edit, const char* message) {
    SchedulerOutput so;
    so.scheduled_cached_reqs.push_back({"a", {}, 3});
    so.num_scheduled_tokens = {{"a", 1}};
    so.total_num_scheduled_tokens = 1;
    edit(so);
    REQUIRE_THROWS_WITH(runner.execute_model(so), Catch::Contains(message));
  };
  fails([](SchedulerOutput& so) { so.scheduled_cached_reqs[0].req_id = "b"; }, "cached request b is unknown");
  fails([](SchedulerOutput& so) { so.num_scheduled_tokens[0].first = "b"; }, "scheduled request b is unknown");
  fails([](SchedulerOutput& so) { so.preempted_req_ids = {"b"}; }, "preempted request b is unknown");
  fails([](SchedulerOutput& so) { so.num_scheduled_tokens[0].second = 2, so.total_num_scheduled_tokens = 2; },
        "scheduled up to token 5 of 4");
  fails([](SchedulerOutput& so) { so.total_num_scheduled_tokens = 5; }, "total_num_scheduled_tokens is 5");
  fails([](SchedulerOutput& so) { so.scheduled_cached_reqs[0].new_block_ids = GroupBlockIds{{kNumBlocks}}; },
        "names block 256");
  fails(
      [](SchedulerOutput& so) {
        so.scheduled_new_reqs.push_back({"a", {1}, {}, {}, 0, GroupBlockIds{{1}}, 0, {}});
      },
      "already in the batch");
}
