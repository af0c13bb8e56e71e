// StepPipeline, the scheduler's half of the engine loop that EngineCore and the scheduler actor both drive,
// with the fake worker and no threads: admission all or nothing with its seeds, the steps in flight (one,
// or two with async scheduling) folded back in order and equal to one step at a time, the stop-string gate,
// and a lost step (an output that does not fit its plan, or a failed runner) resynchronised: the request at
// fault fails with the error, the others are recomputed to the tokens they would have had, nothing is left.
#include <catch2/catch.hpp>

#include "engine/step_pipeline.hpp"
#include "tests/fake_worker.hpp"

using namespace parley;
using namespace parley::fakes;

namespace {

// Counts up from 1000, so drawn seeds are known.
StepPipeline::Entropy counter() {
  auto next = std::make_shared<uint64_t>(1000);
  return [next] { return (*next)++; };
}

// Runs every plan on the fake worker and folds the oldest back, as EngineCore::step does, until idle.
Run drive(StepPipeline& p, FakeWorker& w) {
  Run run;
  std::deque<ModelRunnerOutput> ran;
  for (;;) {
    while (StepPipeline::Plan plan = p.next_step()) ran.push_back(w.execute(*plan)), ++run.steps;
    if (ran.empty()) break;
    REQUIRE(run.steps < 10000);
    StepPipeline::Folded folded = p.fold(ran.front());
    ran.pop_front();
    REQUIRE(folded.error.empty());
    collect(run, folded.outputs);
  }
  return run;
}

// Requests r<first>.., seeded by their number.
std::vector<Request> submission(int first, int count, int max_tokens) {
  std::vector<Request> rs;
  for (int i = first; i < first + count; ++i) {
    rs.push_back(make_request("r" + std::to_string(i), prompt_of(20 + i, i), max_tokens));
    rs.back().sampling_params.seed = uint64_t(i);
  }
  return rs;
}

void require_empty(const StepPipeline& p) {
  REQUIRE(!p.scheduler().has_unfinished_requests());
  REQUIRE(!p.has_steps_in_flight());
  REQUIRE(p.scheduler().kv_cache_manager().block_pool().num_used() == 0);
  REQUIRE(p.scheduler().num_stale_outputs() == 0);
}

}  // namespace

TEST_CASE("step pipeline admits a submission whole or not at all", "[pipeline]") {
  SchedulerConfig c = config(64);
  c.max_waiting = 3;
  StepPipeline p(c, false, counter());
  // The bound counts sequences (prompts x n): one submission larger than it can never be queued (400).
  std::vector<Request> four = submission(0, 2, 4);
  four.push_back(parallel_request("par", prompt_of(20, 5), 2, 4, 0));
  auto refused = p.admit(four, 1.0);
  REQUIRE(refused);
  CHECK(refused->status == 400);
  CHECK_THAT(refused->message, Catch::Contains("4 sequences") && Catch::Contains("at most 3"));
  CHECK(p.scheduler().num_waiting() == 0);
  // One that fits the bound but not what is left of it is a 503.
  std::vector<Request> pair{parallel_request("pair", prompt_of(20, 6), 2, 4, 0)};
  REQUIRE(!p.admit(pair, 1.0));
  auto more = submission(0, 2, 4);
  refused = p.admit(more, 1.0);
  REQUIRE(refused);
  CHECK(refused->status == 503);
  CHECK_THAT(refused->message, Catch::Contains("waiting queue is full (3 sequences)"));
  CHECK(p.scheduler().num_waiting_sequences() == 2);
  p.finish({"pair.0"}, RequestStatus::FinishedAborted);

  // The second request can never be served (longer than the context): the first is taken back too.
  std::vector<Request> bad = submission(0, 1, 4);
  bad.push_back(make_request("long", prompt_of(600, 1), 4));
  refused = p.admit(bad, 1.0);
  REQUIRE(refused);
  CHECK(refused->status == 400);
  CHECK_THAT(refused->message, Catch::Contains("600"));
  CHECK(p.scheduler().find("r0") == nullptr);
  require_empty(p);

  auto two = submission(0, 2, 4);
  REQUIRE(!p.admit(two, 2.5));
  CHECK(p.scheduler().num_waiting() == 2);
  CHECK(p.scheduler().find("r1")->arrival_time == 2.5);
}

TEST_CASE("step pipeline seeds: given seed plus i for children and drawn ones otherwise", "[pipeline]") {
  StepPipeline p(config(64), false, counter());
  std::vector<Request> rs{parallel_request("seeded", prompt_of(20, 1), 3, 4, 0),
                          parallel_request("drawn", prompt_of(20, 2), 3, 4, 0),
                          make_request("plain", prompt_of(20, 3), 4)};
  rs[0].sampling_params.seed = 7;
  rs[1].sampling_params.seed.reset();
  REQUIRE(!p.admit(rs, 0, KvTransfer::FromPrefill));
  CHECK(rs[0].seed == 7);
  CHECK(rs[0].child_seeds == std::vector<uint64_t>{7, 8, 9});
  CHECK(rs[1].seed == 1000);
  CHECK(rs[1].child_seeds == std::vector<uint64_t>{1000, 1001, 1002});
  CHECK(rs[2].seed == 1003);
  for (const Request& r : rs) CHECK(r.kv_transfer == KvTransfer::FromPrefill);
}

TEST_CASE("step pipeline with two steps in flight equals one at a time", "[pipeline]") {
  Run runs[2];
  for (bool async : {false, true}) {
    StepPipeline p(config(12, 48), async, counter());  // a small pool: preemption, and a budget that chunks prompts
    auto rs = submission(0, 6, 30);
    rs.push_back(parallel_request("n", prompt_of(40, 9), 3, 20, 5));
    REQUIRE(!p.admit(rs, 0));
    REQUIRE(p.next_step());
    if (async) {
      REQUIRE(p.next_step());  // planned before the first is folded back
      CHECK(p.steps_in_flight() == std::vector<uint64_t>{1, 2});
    } else {
      CHECK(p.steps_in_flight() == std::vector<uint64_t>{1});
    }
    CHECK(!p.next_step());  // the queue is full
    FakeWorker w;
    StepPipeline fresh(config(12, 48), async, counter());
    REQUIRE(!fresh.admit(rs, 0));
    runs[async] = drive(fresh, w);
    require_empty(fresh);
  }
  CHECK(runs[0].outputs.size() == 9);
  for (const auto& [id, tokens] : runs[0].outputs) CHECK(tokens.size() == (id[0] == 'n' ? 20u : 30u));
  CHECK(runs[0].outputs == runs[1].outputs);
}

TEST_CASE("step pipeline plans nothing while a stop check is pending", "[pipeline]") {
  StepPipeline p(config(64), true, counter());
  auto rs = submission(0, 2, 8);
  rs[1].sampling_params.stop = {"x"};
  REQUIRE(!p.admit(rs, 0));
  FakeWorker w;
  auto plan = p.next_step();
  auto out = p.fold(w.execute(*plan));
  REQUIRE(out.outputs.size() == 2);
  CHECK(p.may_stop(out.outputs));
  CHECK(!p.may_stop({out.outputs[0]}));
  p.stop_check_sent();
  CHECK(!p.next_step());
  p.stop_check_done();
  CHECK(p.next_step());
}

// The requests of `submission(0, 3, 12)` run alone on a fresh pipeline: what a resync must reproduce.
Run alone_outputs() {
  StepPipeline fresh(config(32), true, counter());
  FakeWorker w;
  auto rs = submission(0, 3, 12);
  REQUIRE(!fresh.admit(rs, 0));
  return drive(fresh, w);
}

TEST_CASE("step pipeline: a lost step is resynchronised and every request gets the tokens it would have had",
          "[pipeline][resync]") {
  const Run alone = alone_outputs();
  for (bool runner_failed : {false, true}) {
    CAPTURE(runner_failed);
    StepPipeline p(config(32), true, counter());
    auto rs = submission(0, 3, 12);
    REQUIRE(!p.admit(rs, 0));
    FakeWorker w;
    Run run;
    collect(run, p.fold(w.execute(*p.next_step())).outputs);  // one good step: tokens already out
    auto first = p.next_step(), second = p.next_step();
    REQUIRE(second);
    ModelRunnerOutput out1 = w.execute(*first), out2 = w.execute(*second);
    StepPipeline::Folded lost;
    if (runner_failed) {
      lost = p.fail("device error");
    } else {
      out1.step_id = second->step_id;  // not the output of the step it is folded into
      lost = p.fold(out1);
    }
    CHECK_THAT(lost.error, Catch::Contains(runner_failed ? "device error" : "folded back as step"));
    CHECK(lost.outputs.empty());  // nobody's fault: nobody fails, everyone is recomputed
    CHECK(p.scheduler().num_waiting() == 3);
    CHECK(p.scheduler().kv_cache_manager().block_pool().num_used() == 0);
    CHECK(p.scheduler().stats().num_step_failures == 1);
    auto late = p.fold(out2);  // planned before the resync: dropped
    CHECK(late.error.empty());
    CHECK(late.outputs.empty());
    CHECK(p.scheduler().num_stale_outputs() == 0);
    const Run rest = drive(p, w);  // the next plan tells the worker to drop its batch
    for (const auto& [id, tokens] : rest.outputs)
      run.outputs[id].insert(run.outputs[id].end(), tokens.begin(), tokens.end());
    CHECK(run.outputs == alone.outputs);
    require_empty(p);
  }
}

TEST_CASE("step pipeline: a failure that names its request fails that one, with the error, and no other",
          "[pipeline][resync]") {
  const Run alone = alone_outputs();
  StepPipeline p(config(32), false, counter());
  auto rs = submission(0, 3, 12);
  REQUIRE(!p.admit(rs, 0));
  FakeWorker w;
  Run run;
  collect(run, p.fold(w.execute(*p.next_step())).outputs);
  auto plan = p.next_step();
  const StepPipeline::Folded lost = p.fold(failed_step(plan->step_id, RequestFailure("r1", "bad grammar")));
  REQUIRE(lost.outputs.size() == 1);
  CHECK(lost.outputs[0].req_id == "r1");
  CHECK(lost.outputs[0].finish_reason == FinishReason::Abort);
  CHECK(lost.outputs[0].error == "bad grammar");
  for (const auto& [id, tokens] : drive(p, w).outputs)
    run.outputs[id].insert(run.outputs[id].end(), tokens.begin(), tokens.end());
  CHECK(run.outputs.at("r0") == alone.outputs.at("r0"));
  CHECK(run.outputs.at("r2") == alone.outputs.at("r2"));
  CHECK(run.outputs.at("r1").size() < alone.outputs.at("r1").size());
  require_empty(p);
}

TEST_CASE("step pipeline: requests caught in two lost steps nobody owns fail with the error", "[pipeline][resync]") {
  StepPipeline p(config(32), false, counter());
  auto rs = submission(0, 2, 12);
  REQUIRE(!p.admit(rs, 0));
  FakeWorker w;
  REQUIRE(p.fold(w.execute(*p.next_step())).error.empty());
  REQUIRE(p.next_step());  // lost on the way: the runner never answers it
  CHECK(p.fail("device error").outputs.empty());
  StepPipeline::Plan plan = p.next_step();
  CHECK(plan->reset_batch);
  w.execute(*plan);
  StepPipeline::Folded second = p.fail("device error again");
  std::vector<std::string> failed;
  for (const EngineCoreOutput& o : second.outputs) failed.push_back(o.req_id);
  std::sort(failed.begin(), failed.end());
  CHECK(failed == std::vector<std::string>{"r0", "r1"});
  for (const EngineCoreOutput& o : second.outputs) CHECK(o.error == "device error again");
  CHECK(p.scheduler().stats().num_step_failures == 2);
  drive(p, w);  // tells the worker to drop them
  require_empty(p);
}

TEST_CASE("step pipeline: an entry that does not fit its request fails that request alone, without a resync",
          "[pipeline][resync]") {
  SchedulerConfig c = config(32, 48);  // r0's 20-token prompt and the first 28 of r1's 40 in one step
  StepPipeline p(c, false, counter());
  std::vector<Request> rs{make_request("r0", prompt_of(20, 0), 6), make_request("r1", prompt_of(40, 1), 6)};
  REQUIRE(!p.admit(rs, 0));
  FakeWorker w;
  auto plan = p.next_step();
  const ModelRunnerOutput good = w.execute(*plan);
  ModelRunnerOutput bad;  // the same, except that r1, mid-prompt, gets a token it cannot take
  bad.step_id = good.step_id;
  for (size_t i = 0; i < plan->num_scheduled_tokens.size(); ++i) {
    const int stray = 7;
    if (plan->num_scheduled_tokens[i].first == "r1")
      bad.add_entry(std::span<const int>(&stray, 1));
    else
      bad.add_entry(good.sampled(i));
  }
  const StepPipeline::Folded folded = p.fold(bad);
  CHECK(folded.error.empty());  // no lost step: nobody else is recomputed
  Run run;
  collect(run, folded.outputs);
  REQUIRE(run.finish.count("r1"));
  CHECK(run.finish.at("r1") == FinishReason::Abort);
  for (const EngineCoreOutput& o : folded.outputs)
    if (o.req_id == "r1") CHECK_THAT(o.error, Catch::Contains("internal error") && Catch::Contains("expects none"));
  CHECK(run.outputs.at("r0").size() == 1);  // r0's token of the same step stands
  CHECK(p.scheduler().stats().num_step_failures == 1);
  auto next = p.next_step();
  REQUIRE(next);
  CHECK_FALSE(next->reset_batch);
  CHECK(std::count(next->finished_req_ids.begin(), next->finished_req_ids.end(), "r1") == 1);  // the worker drops it
  const ModelRunnerOutput out = w.execute(*next);
  collect(run, p.fold(out).outputs);
  for (const auto& [id, tokens] : drive(p, w).outputs)
    run.outputs[id].insert(run.outputs[id].end(), tokens.begin(), tokens.end());
  StepPipeline fresh(c, false, counter());
  FakeWorker w2;
  std::vector<Request> alone{make_request("r0", prompt_of(20, 0), 6)};
  REQUIRE(!fresh.admit(alone, 0));
  CHECK(run.outputs.at("r0") == drive(fresh, w2).outputs.at("r0"));
  require_empty(p);
}
