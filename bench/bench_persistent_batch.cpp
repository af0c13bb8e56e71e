// CPU time per step to have the sampling metadata ready: the persistent batch rebuilds it
// only when a request finished or arrived; the baseline rebuilds it from every request each step.
// Both see the same batch changes and append a token to every row each step (not timed).
// Usage: bench_persistent_batch
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/input_batch.hpp"

using namespace parley;

namespace {

constexpr int kMaxModelLen = 4096;
constexpr int kPromptLen = 64;
constexpr int kSteps = 4000;
constexpr int kRuns = 15;

struct Rng {
  uint64_t s;
  uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t(s >> 33);
  }
  int below(int n) { return int(next() % uint32_t(n)); }
};

// A serving mix: mostly nucleus sampling, some greedy, some penalties, logprobs, logit_bias and min_tokens.
CachedRequestState make_request(int serial, Rng& rng) {
  CachedRequestState r;
  r.req_id = "req-" + std::to_string(serial);
  for (int i = 0; i < kPromptLen; ++i) r.prompt_token_ids.push_back(rng.below(32000));
  SamplingParams& p = r.sampling_params;
  if (rng.below(10) < 3)
    p.temperature = 0.0f;
  else
    p.temperature = 0.7f, p.top_p = 0.9f, p.top_k = rng.below(2) ? 40 : -1;
  if (rng.below(5) == 0) p.presence_penalty = 0.5f, p.frequency_penalty = 0.3f;
  if (rng.below(10) == 0) p.logprobs = 5;
  if (rng.below(10) == 0) p.logit_bias = {{11, 2.0f}, {500, -5.0f}};
  if (rng.below(10) == 0) p.min_tokens = 8, p.stop_token_ids = {13};
  r.seed = rng.next();
  r.block_ids = {{serial % 1000}};
  r.num_computed_tokens = kPromptLen;
  return r;
}

// What one steady_clock pair costs with nothing between: subtracted from every timed step.
double timer_overhead_ns() {
  std::vector<double> samples;
  for (int i = 0; i < 100000; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}
const double kTimerNs = timer_overhead_ns();

struct Scenario {
  const char* name;
  int finish_every;  // > 0: the oldest request finishes every this many steps; 0: each runs a drawn length
};

struct Result {
  double ns_per_step = 0;  // mean over the run's steps
  int64_t rebuilds = 0;
};

Result run(int num_reqs, const Scenario& sc, bool persistent) {
  InputBatch batch(num_reqs, kMaxModelLen, 4, {2});
  Rng rng{uint64_t(num_reqs) * 7919};
  int serial = 0;
  std::deque<std::string> by_age;
  std::unordered_map<std::string, int> remaining;  // steps left per request, for the drawn-length scenario
  auto arrive = [&] {
    const int row = batch.add_request(make_request(serial++, rng));
    by_age.push_back(batch.req_ids()[row]);
    remaining[batch.req_ids()[row]] = 64 + rng.below(385);  // mean 256 output tokens
  };
  for (int i = 0; i < num_reqs; ++i) arrive();
  batch.refresh_sampling_metadata();
  const int64_t rebuilds_before = batch.num_metadata_rebuilds();
  double total_ns = 0;
  int64_t sink = 0;
  for (int step = 0; step < kSteps; ++step) {
    // The batch changes as the scheduler reports it: finished requests leave, new ones take their rows.
    std::vector<std::string> finished;
    if (sc.finish_every > 0 && step % sc.finish_every == 0) finished.push_back(by_age.front());
    for (int row = 0; row < batch.num_reqs() && sc.finish_every == 0; ++row)
      if (--remaining[batch.req_ids()[row]] == 0) finished.push_back(batch.req_ids()[row]);
    for (const auto& id : finished) {
      batch.remove_request(id);
      remaining.erase(id);
      by_age.erase(std::find(by_age.begin(), by_age.end(), id));
    }
    for (size_t i = 0; i < finished.size(); ++i) arrive();
    batch.condense();

    const auto t0 = std::chrono::steady_clock::now();
    if (!persistent || batch.batch_changed()) batch.refresh_sampling_metadata();
    const SamplingMetadata& m = batch.sampling_metadata();
    sink += m.num_reqs() + m.max_num_logprobs;
    total_ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();

    for (int row = 0; row < batch.num_reqs(); ++row) batch.append_token(row, step % 32000);
  }
  Result r;
  r.ns_per_step = std::max(0.0, total_ns / kSteps - kTimerNs) + (sink == -1 ? 1 : 0);
  r.rebuilds = batch.num_metadata_rebuilds() - rebuilds_before;
  return r;
}

Result median_of_runs(int num_reqs, const Scenario& sc, bool persistent) {
  std::vector<Result> runs;
  for (int i = 0; i < kRuns; ++i) runs.push_back(run(num_reqs, sc, persistent));
  std::sort(runs.begin(), runs.end(), [](const Result& a, const Result& b) { return a.ns_per_step < b.ns_per_step; });
  return runs[kRuns / 2];
}

}  // namespace

int main() {
  const Scenario scenarios[] = {{"one finishes and one arrives every 4 steps", 4},
                                {"each request runs 64..448 steps (mean 256)", 0}};
  std::printf(
      "Sampling metadata ready for the sampler, CPU time per step (median of %d runs of %d steps;\n"
      "a timer overhead of %.0f ns per step subtracted)\n\n",
      kRuns, kSteps, kTimerNs);
  for (const Scenario& sc : scenarios) {
    std::printf("%s\n", sc.name);
    std::printf("| %8s | %18s | %20s | %16s | %7s |\n", "requests", "rebuild every step", "persistent (changes)",
                "steps rebuilt", "ratio");
    std::printf("|----------|--------------------|----------------------|------------------|---------|\n");
    for (int n : {8, 64, 256}) {
      const Result every = median_of_runs(n, sc, false), persistent = median_of_runs(n, sc, true);
      std::printf("| %8d | %15.0f ns | %17.0f ns | %9lld / %4d | %6.1fx |\n", n, every.ns_per_step,
                  persistent.ns_per_step, (long long)persistent.rebuilds, kSteps,
                  every.ns_per_step / persistent.ns_per_step);
    }
    std::printf("\n");
  }
  return 0;
}
