// The scheduler's own CPU time per step, no model: a fake worker samples one token per request that reaches
// its end, so every step is a decode step once the prompts are in. Prints µs per schedule(),
// update_from_output() and stats() at each concurrency, with one or two steps in flight (async scheduling),
// with warm caches and with the caches evicted before each step (as a real forward pass between steps does).
//   bench_scheduler [--concurrency 64,256] [--gen-tokens 128] [--prompt-tokens 32] [--rounds 20] [--evict-mib 64]
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/scheduler.hpp"

namespace {

using namespace parley;
using Clock = std::chrono::steady_clock;

// Plays the worker: knows each request's length and computed tokens from the plans alone.
struct FakeWorker {
  struct Row {
    int num_tokens = 0, computed = 0;
  };
  std::unordered_map<std::string, Row> rows;

  ModelRunnerOutput execute(const SchedulerOutput& so) {
    for (const auto& id : so.finished_req_ids) rows.erase(id);
    for (const auto& id : so.preempted_req_ids) rows.erase(id);
    for (const auto& d : so.scheduled_new_reqs)
      rows[d.req_id] = {int(d.prompt_token_ids.size() + d.output_token_ids.size()), d.num_computed_tokens};
    ModelRunnerOutput out;
    out.step_id = so.step_id;
    for (const auto& [id, n] : so.num_scheduled_tokens) {
      Row& r = rows.at(id);
      r.computed += n;
      const int token = 7 + int(r.num_tokens % 300);
      const bool samples = r.computed >= r.num_tokens;
      out.add_entry(std::span<const int>(&token, samples ? 1 : 0));
      if (samples) ++r.num_tokens;
    }
    return out;
  }
};

struct Times {
  double schedule = 0, update = 0, stats = 0;
  long steps = 0;
};

// Writes over a buffer larger than the caches: the scheduler's data is cold again, as after a forward pass.
void evict(std::vector<char>& buffer) {
  for (size_t i = 0; i < buffer.size(); i += 64) buffer[i] = char(buffer[i] + 1);
}

void run_round(Scheduler& sched, int concurrency, int prompt_tokens, int gen_tokens, int round, bool async,
               std::vector<char>& evict_buffer, Times& t) {
  for (int i = 0; i < concurrency; ++i) {
    std::vector<int> prompt(static_cast<size_t>(prompt_tokens));
    for (int p = 0; p < prompt_tokens; ++p) prompt[size_t(p)] = 3 + (i * 31 + p * 7 + round) % 400;
    SamplingParams params;
    params.max_tokens = gen_tokens;
    params.ignore_eos = true;
    sched.add_request(Request("b" + std::to_string(round) + "." + std::to_string(i), prompt, params, uint64_t(i)));
  }
  FakeWorker worker;
  std::deque<std::pair<SchedulerOutput, ModelRunnerOutput>> in_flight;
  const size_t depth = async ? 2 : 1;
  auto fold = [&] {
    auto [so, mro] = std::move(in_flight.front());
    in_flight.pop_front();
    evict(evict_buffer);
    const auto t0 = Clock::now();
    auto outputs = sched.update_from_output(so, mro);
    const auto t1 = Clock::now();
    SchedulerStats s = sched.stats();
    const auto t2 = Clock::now();
    t.update += std::chrono::duration<double>(t1 - t0).count();
    t.stats += std::chrono::duration<double>(t2 - t1).count();
    if (s.num_steps < 0 || outputs.size() > size_t(concurrency)) std::abort();  // keeps both results used
  };
  while (sched.has_unfinished_requests() || !in_flight.empty()) {
    while (in_flight.size() < depth && sched.has_unfinished_requests()) {
      evict(evict_buffer);
      const auto t0 = Clock::now();
      SchedulerOutput so = sched.schedule();
      t.schedule += std::chrono::duration<double>(Clock::now() - t0).count();
      if (!so.has_work()) break;
      ++t.steps;
      ModelRunnerOutput mro = worker.execute(so);
      in_flight.emplace_back(std::move(so), std::move(mro));
    }
    if (!in_flight.empty()) fold();
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Scheduler CPU time per step with a fake worker"};
  std::vector<int> concurrency = {64, 256};
  int gen_tokens = 128, prompt_tokens = 32, rounds = 20, evict_mib = 64;
  app.add_option("--concurrency", concurrency)->delimiter(',');
  app.add_option("--gen-tokens", gen_tokens);
  app.add_option("--prompt-tokens", prompt_tokens);
  app.add_option("--rounds", rounds);
  app.add_option("--evict-mib", evict_mib, "buffer written over before each call, cold rows");
  CLI11_PARSE(app, argc, argv);

  std::printf(
      "| requests | steps in flight | caches | schedule µs | update µs | stats µs | total µs "
      "|\n|---|---|---|---|---|---|---|\n");
  std::vector<char> cold(size_t(evict_mib) << 20), warm_buffer;
  for (int c : concurrency) {
    for (auto [async, evicted] : {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
      std::vector<char>& buffer = evicted ? cold : warm_buffer;
      SchedulerConfig config;
      config.max_model_len = prompt_tokens + gen_tokens + 16;
      config.max_num_seqs = std::max(256, c);
      config.max_num_batched_tokens = std::max(2048, c * prompt_tokens);
      config.num_kv_blocks = c * ((config.max_model_len + 15) / 16) + 16;
      config.eos_token_ids = {2};
      Scheduler sched(config);
      Times warm, t;
      run_round(sched, c, prompt_tokens, gen_tokens, 0, async, buffer, warm);
      for (int r = 1; r <= rounds; ++r) run_round(sched, c, prompt_tokens, gen_tokens, r, async, buffer, t);
      const double us = 1e6 / double(t.steps);
      std::printf("| %d | %d | %s | %.1f | %.1f | %.1f | %.1f |\n", c, async ? 2 : 1, evicted ? "evicted" : "warm",
                  t.schedule * us, t.update * us, t.stats * us, (t.schedule + t.update + t.stats) * us);
    }
  }
}
