// Random engine scenarios against the fake worker, driven as the server drives the engine (StepPipeline:
// admission with seeds, one or two steps in flight, aborts, lost steps). Each scenario draws its limits
// (max_num_seqs 1..64, pool size, token budget, chunked prefill, prefix caching, the delayed split) and a
// stream of submissions (prompt lists, n up to 8, shared prefixes), then checks after every step that the
// worker never holds more rows than max_num_seqs, and at the end that every request finished `stop` or
// `length` with exactly the tokens it has when run alone (unless the scenario aborted it, or a lost step it
// was blamed for failed it with an error), that refusals are the documented ones, and that no block is left.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/step_pipeline.hpp"
#include "tests/fake_worker.hpp"

using namespace parley;
using namespace parley::fakes;

namespace {

// A worker that fails some steps: a step it fails leaves it "in disarray" until a plan resets its batch, as
// a real worker whose update_states threw halfway would be.
struct FlakyWorker {
  FakeWorker fake;
  int max_rows = 0;
  bool broken = false;
  std::mt19937_64* rng = nullptr;
  int fail_one_in = 0;  // 0: never fails

  ModelRunnerOutput execute(const SchedulerOutput& so) {
    if (so.reset_batch) broken = false;
    if (broken) return failed_step(so.step_id, std::runtime_error("batch in disarray"));
    if (fail_one_in > 0 && so.total_num_scheduled_tokens > 0 && (*rng)() % uint64_t(fail_one_in) == 0) {
      broken = true;
      const auto& entries = so.num_scheduled_tokens;
      if ((*rng)() % 2) return failed_step(so.step_id, std::runtime_error("device lost"));
      const std::string& culprit = entries[(*rng)() % entries.size()].first;
      return failed_step(so.step_id, RequestFailure(culprit, "its own fault"));
    }
    ModelRunnerOutput out = fake.execute(so);
    REQUIRE(int(fake.tokens.size()) <= max_rows);  // the InputBatch's rows
    return out;
  }
};

struct Expected {
  std::vector<int> tokens;
  FinishReason finish;
};

// What a request seeded `seed` gives alone: the fake worker's draws until a stop token or max_tokens.
Expected alone(std::vector<int> seq, uint64_t seed, const SamplingParams& p) {
  Expected e{{}, FinishReason::Length};
  for (int i = 0; i < p.max_tokens; ++i) {
    const int t = FakeWorker::next_token(seq, seed);
    seq.push_back(t), e.tokens.push_back(t);
    if (std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), t) != p.stop_token_ids.end())
      return {e.tokens, FinishReason::Stop};
  }
  return e;
}

struct Scenario {
  std::mt19937_64 rng;
  SchedulerConfig config;
  size_t steps_in_flight = 1;
  int fail_one_in = 0;

  explicit Scenario(uint64_t seed) : rng(seed) {
    config = fakes::config(pick(8, 160), pick(1, 8) * pick(4, 32));
    config.max_num_seqs = pick(0, 3) == 0 ? pick(1, 4) : pick(1, 64);
    config.long_prefill_token_threshold = pick(0, 1) ? 0 : pick(4, 64);
    config.enable_prefix_caching = pick(0, 3) > 0;
    config.enable_delayed_split = pick(0, 4) > 0;
    config.max_waiting = pick(0, 4) == 0 ? pick(1, 16) : 1024;
    steps_in_flight = size_t(pick(1, 2));
    fail_one_in = pick(0, 3) == 0 ? pick(15, 60) : 0;
  }
  int pick(int lo, int hi) { return lo + int(rng() % uint64_t(hi - lo + 1)); }

  // A submission of 1-4 prompts, some sharing a prefix (prefix hits), each with n in 1..8.
  std::vector<Request> submission(int number) {
    std::vector<Request> rs;
    const int prompts = pick(1, 4);
    for (int k = 0; k < prompts; ++k) {
      std::vector<int> prompt = prompt_of(pick(0, 2) * 16 + pick(0, 40), pick(0, 2));  // a few shared bases
      for (int extra = pick(1, 40); extra > 0; --extra) prompt.push_back(pick(10, 300));
      const int n = pick(0, 2) == 0 ? pick(2, 8) : 1;
      const std::string id = "s" + std::to_string(number) + "p" + std::to_string(k);
      Request r = parallel_request(id, std::move(prompt), n, pick(1, 40), rng());
      if (n == 1) r.child_req_ids.clear(), r.child_seeds.clear();
      for (int s = pick(0, 40); s > 0; --s) r.sampling_params.stop_token_ids.push_back(pick(3, 402));
      r.sampling_params.seed = r.seed;
      rs.push_back(std::move(r));
    }
    return rs;
  }
};

struct Outcome {
  std::map<std::string, Expected> expected;  // per sequence id (children by their own ids)
  std::map<std::string, std::vector<int>> tokens;
  std::map<std::string, FinishReason> finish;
  std::map<std::string, std::string> error;
  std::set<std::string> aborted;                    // by the scenario
  std::vector<std::vector<std::string>> submitted;  // per user request: its sequence ids
  int refusals = 0, steps = 0;
};

void collect(Outcome& o, const std::vector<EngineCoreOutput>& outputs) {
  for (const EngineCoreOutput& e : outputs) {
    REQUIRE(!o.finish.count(e.req_id));  // nothing after the end
    auto& t = o.tokens[e.req_id];
    t.insert(t.end(), e.new_token_ids.begin(), e.new_token_ids.end());
    if (e.finished()) o.finish[e.req_id] = e.finish_reason;
    if (!e.error.empty()) o.error[e.req_id] = e.error;
  }
}

void admit(Scenario& sc, StepPipeline& p, Outcome& o, int number) {
  std::vector<Request> rs = sc.submission(number);
  const bool too_wide =
      std::any_of(rs.begin(), rs.end(), [&](const Request& r) { return r.sampling_params.n > sc.config.max_num_seqs; });
  if (const auto refusal = p.admit(rs, 0)) {
    ++o.refusals;
    if (too_wide) CHECK(refusal->status == 400);
    CHECK((refusal->status == 400 || refusal->status == 503));
    return;
  }
  REQUIRE(!too_wide);
  for (const Request& r : rs) {
    const auto ids = r.child_req_ids.empty() ? std::vector<std::string>{r.request_id} : r.child_req_ids;
    SamplingParams one = r.sampling_params;
    for (size_t i = 0; i < ids.size(); ++i) o.expected[ids[i]] = alone(r.prompt_token_ids, r.seed + i, one);
    o.submitted.push_back(ids);
  }
}

void check_outcome(const Outcome& o) {
  for (const auto& [id, want] : o.expected) {
    CAPTURE(id);
    REQUIRE(o.finish.count(id));
    const std::vector<int>& got = o.tokens.count(id) ? o.tokens.at(id) : std::vector<int>{};
    const bool ended_early = o.aborted.count(id) || o.error.count(id);
    if (!ended_early) {
      CHECK(o.finish.at(id) == want.finish);
      CHECK(got == want.tokens);
      continue;
    }
    CHECK(o.finish.at(id) != FinishReason::None);
    REQUIRE(got.size() <= want.tokens.size());
    CHECK(std::equal(got.begin(), got.end(), want.tokens.begin()));  // what it had was right
    if (o.finish.at(id) == FinishReason::Abort && !o.aborted.count(id)) CHECK(o.error.count(id));
  }
}

void run_scenario(uint64_t seed) {
  CAPTURE(seed);
  Scenario sc(seed);
  CAPTURE(sc.config.max_num_seqs, sc.config.num_kv_blocks, sc.config.max_num_batched_tokens,
          sc.config.long_prefill_token_threshold, sc.config.enable_prefix_caching, sc.config.enable_delayed_split,
          sc.steps_in_flight, sc.fail_one_in);
  StepPipeline p(sc.config, sc.steps_in_flight == 2);
  FlakyWorker w;
  w.max_rows = sc.config.max_num_seqs;
  w.rng = &sc.rng;
  w.fail_one_in = sc.fail_one_in;
  Outcome o;
  std::deque<ModelRunnerOutput> ran;
  const int submissions = sc.pick(1, 12);
  for (int next = 0, rounds = 0; next < submissions || p.scheduler().has_unfinished_requests() || !ran.empty();) {
    REQUIRE(++rounds < 40000);  // nothing stuck
    if (next < submissions && sc.pick(0, 2) == 0) admit(sc, p, o, next++);
    if (!o.submitted.empty() && sc.pick(0, 30) == 0) {  // the client of a random request goes away
      const auto& ids = o.submitted[size_t(sc.pick(0, int(o.submitted.size()) - 1))];
      for (const std::string& id : p.finish(ids, RequestStatus::FinishedAborted)) {
        o.aborted.insert(id);
        if (!o.finish.count(id)) o.finish[id] = FinishReason::Abort;
      }
    }
    while (StepPipeline::Plan plan = p.next_step()) ran.push_back(w.execute(*plan)), ++o.steps;
    REQUIRE(o.steps < 20000);
    if (ran.empty()) {
      if (next >= submissions && !p.scheduler().has_unfinished_requests()) break;
      if (next < submissions) admit(sc, p, o, next++);
      continue;
    }
    StepPipeline::Folded folded = p.fold(ran.front());
    ran.pop_front();
    collect(o, folded.outputs);
    REQUIRE(p.scheduler().num_rows() <= sc.config.max_num_seqs);
    p.scheduler().kv_cache_manager().block_pool().check_invariants();
  }
  while (StepPipeline::Plan plan = p.next_step()) p.fold(w.execute(*plan));  // the worker drops the last rows
  check_outcome(o);
  REQUIRE(p.scheduler().kv_cache_manager().block_pool().num_used() == 0);
  REQUIRE(p.scheduler().kv_cache_manager().num_requests() == 0);
  REQUIRE(p.scheduler().num_stale_outputs() == 0);
  REQUIRE(w.fake.tokens.empty());
}

}  // namespace

TEST_CASE("random engine scenarios: rows within max_num_seqs, outputs as alone, nothing leaked", "[random]") {
  // PARLEY_RANDOM_SCENARIOS overrides the count (CI: the default); PARLEY_RANDOM_SEED the first seed.
  const char* count = std::getenv("PARLEY_RANDOM_SCENARIOS");
  const char* first = std::getenv("PARLEY_RANDOM_SEED");
#ifdef PARLEY_SANITIZED
  const uint64_t n = count ? std::strtoull(count, nullptr, 10) : 1000;  // -O0 with ASan: ~10x slower
#else
  const uint64_t n = count ? std::strtoull(count, nullptr, 10) : 5000;
#endif
  const uint64_t base = first ? std::strtoull(first, nullptr, 10) : 1;
  for (uint64_t s = base; s < base + n; ++s) run_scenario(s);
}
