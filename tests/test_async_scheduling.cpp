// Async scheduling: planning step N+1 before step N's output is folded back gives exactly
// the tokens synchronous scheduling gives, schedules no request for a step it cannot use, wastes at most
// one step after EOS (its token never emitted), and leaks nothing. First with the fake worker, which
// checks every KV slot it reads, then with stories260K through EngineCore.
#include <catch2/catch.hpp>

#include <functional>

#include "engine_core_runs.hpp"
#include "fake_worker.hpp"

namespace parley {
using namespace fakes;
namespace {

// The fake worker draws from 400 tokens; 20 of them end a request that does not ignore EOS.
SchedulerConfig eos_config(int num_blocks, int budget) {
  SchedulerConfig c = config(num_blocks, budget);
  c.eos_token_ids.clear();
  for (int t = 3; t < 23; ++t) c.eos_token_ids.push_back(t);
  return c;
}

// Greedy and seeded, stopped by EOS or by length, min_tokens, long prompts (chunked by small budgets),
// and two n > 1 requests, one with its prompt on a block boundary.
void add_mix(Scheduler& s) {
  for (int i = 0; i < 10; ++i) {
    Request r = make_request("r" + std::to_string(i), prompt_of(8 + i * 13, i), 6 + (i * 7) % 30);
    r.sampling_params.ignore_eos = i % 3 != 0;
    r.sampling_params.min_tokens = i % 4 == 0 ? 3 : 0;
    r.seed = 500 + uint64_t(i);
    s.add_request(std::move(r));
  }
  s.add_request(parallel_request("p", prompt_of(70, 11), 4, 20, 900));
  s.add_request(parallel_request("q", prompt_of(32, 12), 3, 12, 40));
}

struct Compared {
  Run sync, async;
  SchedulerStats sync_stats, async_stats;
};

// The same requests run one step at a time and with two steps in flight.
Compared run_both(const SchedulerConfig& c, const std::function<void(Scheduler&)>& add) {
  Compared out;
  for (size_t steps_in_flight : {1, 2}) {
    Scheduler s(c);
    FakeWorker w;
    add(s);
    (steps_in_flight == 1 ? out.sync : out.async) = run_all(s, w, steps_in_flight);
    (steps_in_flight == 1 ? out.sync_stats : out.async_stats) = s.stats();
  }
  return out;
}

int count_finished(const Run& run, FinishReason reason) {
  int n = 0;
  for (const auto& [id, why] : run.finish) n += why == reason;
  return n;
}

}  // namespace

TEST_CASE("async equals sync: chunked prefill, preemption, splits, EOS", "[async]") {
  struct Case {
    int blocks, budget;
    bool caching;
  };
  for (const Case k : {Case{512, 512, true}, Case{512, 24, true}, Case{24, 64, true}, Case{24, 40, false}}) {
    CAPTURE(k.blocks, k.budget, k.caching);
    SchedulerConfig c = eos_config(k.blocks, k.budget);
    c.enable_prefix_caching = k.caching;
    const auto [sync, async, sync_stats, async_stats] = run_both(c, add_mix);
    REQUIRE(async.outputs == sync.outputs);
    REQUIRE(async.finish == sync.finish);
    REQUIRE(async.outputs.size() == 17);
    REQUIRE(async_stats.num_splits == 2);
    const int stopped = count_finished(sync, FinishReason::Stop);
    REQUIRE(stopped > 0);
    REQUIRE(sync_stats.num_discarded_tokens == 0);
    // A wasted token per EOS stop at most, and per preemption of a request with a step in flight.
    REQUIRE(async_stats.num_discarded_tokens <= stopped + async_stats.num_preemptions);
    if (k.blocks == 24) REQUIRE(async_stats.num_preemptions > 0);
    if (k.blocks == 512) REQUIRE(async_stats.num_discarded_tokens > 0);
  }
}

TEST_CASE("async: no step for a request certain to finish, one after EOS", "[async]") {
  const auto [sync, async, sync_stats, async_stats] = run_both(config(512, 512), [](Scheduler& s) {
    for (int i = 0; i < 6; ++i) s.add_request(make_request("r" + std::to_string(i), prompt_of(10 + i, i), 1 + i * 5));
  });
  REQUIRE(async.outputs == sync.outputs);
  // 1 prefill + 25 decode steps + 1 that only tells the worker of the last finish, either way.
  REQUIRE(async.steps == sync.steps);
  REQUIRE(async.steps == 27);
  REQUIRE(async_stats.num_discarded_tokens == 0);

  // The fake worker's token after prompt {5} is fixed: as EOS it ends the request on its first token,
  // while step 2, planned before step 1's output, already holds the request: one token is discarded.
  const int first = FakeWorker::next_token({5});
  SchedulerConfig c = config(64);
  c.eos_token_ids = {first};
  Scheduler s(c);
  FakeWorker w;
  SamplingParams p;
  p.max_tokens = 5;
  s.add_request(Request("x", {5}, p, 0));
  const Run run = run_all(s, w, 2);
  REQUIRE(run.outputs.at("x") == std::vector<int>{first});
  REQUIRE(run.finish.at("x") == FinishReason::Stop);
  REQUIRE(s.stats().num_discarded_tokens == 1);
}

TEST_CASE("async: an abort with a step in flight, then the id reused", "[async]") {
  Scheduler s(config(64, 64));
  FakeWorker w;
  s.add_request(make_request("a", prompt_of(20, 1), 30));
  const SchedulerOutput so1 = s.schedule();
  const ModelRunnerOutput out1 = w.execute(so1);
  const SchedulerOutput so2 = s.schedule();  // planned before step 1's output: a's next token is a placeholder
  const ModelRunnerOutput out2 = w.execute(so2);
  REQUIRE(so2.num_scheduled_tokens == std::vector<std::pair<std::string, int>>{{"a", 1}});
  REQUIRE(s.find("a")->num_output_placeholders == 2);
  Run run;
  collect(run, s.update_from_output(so1, out1));
  REQUIRE(run.outputs.at("a").size() == 1);
  REQUIRE(s.finish_requests({"a"}, RequestStatus::FinishedAborted) == std::vector<std::string>{"a"});
  REQUIRE(s.num_stale_outputs() == 1);  // step 2's token for the old "a"
  REQUIRE(s.kv_cache_manager().block_pool().num_used() == 0);
  s.add_request(make_request("a", prompt_of(25, 2), 6));  // the id is free again at once
  const SchedulerOutput so3 = s.schedule();
  REQUIRE(so3.finished_req_ids == std::vector<std::string>{"a"});
  REQUIRE(so3.scheduled_new_reqs.size() == 1);
  const ModelRunnerOutput out3 = w.execute(so3);
  REQUIRE(s.update_from_output(so2, out2).empty());  // the old "a"'s token is dropped, not given to the new one
  REQUIRE(s.num_stale_outputs() == 0);
  Run rest;
  collect(rest, s.update_from_output(so3, out3));
  const Run tail = run_all(s, w, 2);
  for (const auto& [id, tokens] : tail.outputs)
    rest.outputs[id].insert(rest.outputs[id].end(), tokens.begin(), tokens.end());

  Scheduler alone(config(64, 64));
  FakeWorker w2;
  alone.add_request(make_request("a", prompt_of(25, 2), 6));
  REQUIRE(rest.outputs == run_all(alone, w2).outputs);
  REQUIRE(s.stats().num_discarded_tokens == 1);
}

TEST_CASE("async equals sync on stories260K: tokens and logprobs", "[async][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const auto reqs = test::mixed_requests(tok, {"Once upon a time", "The cat sat on the mat and",
                                               "Lily and Ben went to the park. They", "One day, a big dog"});
  const SchedulerConfig base = test::model_scheduler_config(m, 256);
  SchedulerConfig chunked = base;
  chunked.max_num_batched_tokens = 16;
  chunked.long_prefill_token_threshold = 7;
  const SchedulerConfig tight = test::model_scheduler_config(m, 8);  // 128 slots for 11 requests: preemption
  for (const SchedulerConfig& c : {base, chunked, tight}) {
    CAPTURE(c.max_num_batched_tokens, c.num_kv_blocks);
    const test::CoreRun sync = test::run_core(m.model, reqs, c, false);
    const test::CoreRun async = test::run_core(m.model, reqs, c, true);
    REQUIRE(sync.tokens.size() == 11);
    REQUIRE(async.tokens == sync.tokens);
    REQUIRE(async.logprobs == sync.logprobs);
    REQUIRE(async.finish == sync.finish);
    REQUIRE(sync.logprobs.at("m1").size() == sync.tokens.at("m1").size());
    REQUIRE(sync.tokens.at("m2").size() >= 30);  // min_tokens held EOS back
    if (c.num_kv_blocks == 8) REQUIRE(async.stats.num_preemptions > 0);
    REQUIRE(async.stats.num_splits == 1);
  }
}

TEST_CASE("async: an output that does not match its step is refused, naming the step", "[async]") {
  Scheduler s(config(64, 64));
  FakeWorker w;
  s.add_request(make_request("a", prompt_of(8, 1), 4));
  s.add_request(make_request("b", prompt_of(8, 2), 4));
  const SchedulerOutput so1 = s.schedule();
  REQUIRE(so1.num_scheduled_tokens.size() == 2);
  ModelRunnerOutput out1 = w.execute(so1);
  ModelRunnerOutput short_output = out1;  // one result for two scheduled requests
  short_output.token_offsets.pop_back();
  REQUIRE_THROWS_WITH(s.update_from_output(so1, short_output),
                      Catch::Contains("returned 1 results for step 1, which scheduled 2 requests"));
  ModelRunnerOutput other_step = out1;
  other_step.step_id = 2;
  REQUIRE_THROWS_WITH(s.update_from_output(so1, other_step), Catch::Contains("output of step 2 folded back as step 1"));
  REQUIRE(s.update_from_output(so1, out1).size() == 2);  // the refusals left the plan in place
}

}  // namespace parley
