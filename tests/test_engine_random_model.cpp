// Random engine scenarios on the real stories260K model, for what the fake worker cannot play: n-gram
// speculation (exact verification, padded decode batches), async scheduling and prefill/decode
// disaggregation, with max_num_seqs from 1 to 16 and n up to 4. The worker's InputBatch has max_num_seqs rows
// and throws past them, which the engine would count as a lost step: every scenario must lose none, and every
// choice must equal its request run alone on a plain engine.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>

#include "engine_core_runs.hpp"
#include "pd_pair.hpp"

using namespace parley;

namespace {

struct ModelScenario {
  std::mt19937_64 rng;
  int pick(int lo, int hi) { return lo + int(rng() % uint64_t(hi - lo + 1)); }
};

// Prompts with repeats, so that n-gram lookup finds drafts.
std::vector<int> random_prompt(ModelScenario& sc) {
  std::vector<int> motif;
  for (int i = sc.pick(2, 6); i > 0; --i) motif.push_back(sc.pick(3, 511));
  std::vector<int> p{1};  // BOS
  for (int reps = sc.pick(1, 6); reps > 0; --reps) {
    p.insert(p.end(), motif.begin(), motif.end());
    for (int i = sc.pick(0, 3); i > 0; --i) p.push_back(sc.pick(3, 511));
  }
  return p;
}

Request random_request(ModelScenario& sc, int index, int max_n) {
  SamplingParams p;
  p.temperature = sc.pick(0, 2) ? 0.8f : 0.0f;
  p.n = p.temperature > 0 ? sc.pick(1, max_n) : 1;
  p.max_tokens = sc.pick(2, 24);
  p.ignore_eos = sc.pick(0, 1);
  const std::string id = "q" + std::to_string(index);
  const uint64_t seed = sc.rng() % 100000;
  Request r(p.n > 1 ? id + ".0" : id, random_prompt(sc), p, seed);
  if (p.n > 1)
    for (int i = 0; i < p.n; ++i)
      r.child_req_ids.push_back(id + "." + std::to_string(i)), r.child_seeds.push_back(seed + i);
  return r;
}

// Child i of an n-sample request alone: an n = 1 request seeded seed + i on a plain engine.
test::CoreRun alone(LlamaModel& model, const SchedulerConfig& plain, const std::vector<Request>& reqs) {
  std::vector<Request> singles;
  for (const Request& r : reqs) {
    if (!r.awaits_split()) {
      singles.push_back(r);
      continue;
    }
    for (size_t i = 0; i < r.child_req_ids.size(); ++i) {
      SamplingParams p = r.sampling_params;
      p.n = 1;
      singles.emplace_back(r.child_req_ids[i], r.prompt_token_ids, p, r.child_seeds[i]);
    }
  }
  test::CoreRun all;
  for (Request& r : singles) {  // one at a time: nothing shares its batch
    const test::CoreRun one = test::run_core(model, {r}, plain, false);
    for (const auto& [id, t] : one.tokens) all.tokens[id] = t;
    for (const auto& [id, f] : one.finish) all.finish[id] = f;
  }
  return all;
}

}  // namespace

TEST_CASE("random engine scenarios on stories260K: speculation, async scheduling and PD at full batches",
          "[random][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"), 1);
  const char* count = std::getenv("PARLEY_RANDOM_MODEL_SCENARIOS");
#ifdef PARLEY_SANITIZED
  const uint64_t n = count ? std::strtoull(count, nullptr, 10) : 40;  // -O0 with ASan
#else
  const uint64_t n = count ? std::strtoull(count, nullptr, 10) : 200;
#endif
  const SchedulerConfig plain = test::model_scheduler_config(m, 256);
  int with_pd = 0, with_spec = 0, at_one_row = 0;
  for (uint64_t seed = 1; seed <= n; ++seed) {
    CAPTURE(seed);
    ModelScenario sc{std::mt19937_64(seed)};
    SchedulerConfig c = test::model_scheduler_config(m, sc.pick(48, 160));
    c.max_num_seqs = sc.pick(0, 3) == 0 ? 1 : sc.pick(2, 16);
    c.max_num_batched_tokens = sc.pick(16, 128);
    c.long_prefill_token_threshold = sc.pick(0, 1) ? 0 : sc.pick(4, 32);
    c.enable_prefix_caching = sc.pick(0, 3) > 0;
    const bool async_scheduling = sc.pick(0, 1);
    const int k = sc.pick(0, 2) ? 0 : sc.pick(2, 3);
    const bool pd = sc.pick(0, 3) == 0;
    std::optional<SpeculativeConfig> spec;
    if (k > 0)
      spec = SpeculativeConfig::parse(R"({"method": "ngram", "prompt_lookup_min": 2, "num_speculative_tokens": )" +
                                      std::to_string(k) + "}");
    CAPTURE(c.max_num_seqs, c.num_kv_blocks, c.max_num_batched_tokens, c.long_prefill_token_threshold,
            c.enable_prefix_caching, async_scheduling, k, pd);
    std::vector<Request> reqs;
    for (int i = sc.pick(1, 8); i > 0; --i) reqs.push_back(random_request(sc, i, std::min(4, c.max_num_seqs)));
    const test::CoreRun want = alone(m.model, plain, reqs);
    test::CoreRun got;
    if (pd) {
      test::PdPair pair(m.model, c, spec, async_scheduling);
      got = pair.run(reqs);
      REQUIRE(pair.prefill.scheduler().stats().num_step_failures == 0);
    } else {
      got = test::run_core(m.model, reqs, c, async_scheduling, spec);
    }
    REQUIRE(got.stats.num_step_failures == 0);  // the InputBatch never ran out of rows
    CHECK(got.tokens == want.tokens);
    CHECK(got.finish == want.finish);
    with_pd += pd, with_spec += k > 0, at_one_row += c.max_num_seqs == 1;
  }
  if (n >= 40) CHECK((with_pd > 0 && with_spec > 0 && at_one_row > 0));  // the draw covers each feature
}
