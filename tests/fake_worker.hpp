// The scheduler's test harness (no model, no CAF): a fake worker that checks every KV slot it reads,
// request builders, and run_all, which steps a scheduler to the end with one or two steps in flight.
#pragma once
#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "engine/scheduler.hpp"

namespace parley::fakes {

// Plays the worker: mirrors each request's tokens from the SchedulerOutputs alone and "samples" a token
// that is a function of every token before it and the request's seed, as a real model's draw is. Its
// fake KV cache stores the token id each slot was computed from, so a request reading a slot it did not
// fill (a wrong block table, a shared block overwritten, a missing copy-on-write) fails at once. Each KV
// group has its own tables; a sliding-window group's queries read only their window.
struct FakeWorker {
  std::vector<int> windows = {0};                  // per KV group (SchedulerConfig::kv_group_windows)
  std::map<std::string, std::vector<int>> tokens;  // prompt + output as the worker knows them
  std::map<std::string, int> computed;
  std::map<std::string, GroupBlockIds> blocks;
  std::map<std::string, uint64_t> seeds;
  std::map<std::string, std::vector<uint64_t>> child_seeds;  // parents awaiting their split
  std::map<int, std::map<int, int>> kv;                      // block -> slot -> token id computed there

  static int next_token(const std::vector<int>& seq, uint64_t seed = 0) {
    uint64_t h = 1469598103934665603ull ^ seed;
    for (int t : seq) h = (h ^ uint64_t(t)) * 1099511628211ull;
    return 3 + int(h % 400);
  }

  ModelRunnerOutput execute(const SchedulerOutput& so) {
    if (so.reset_batch) tokens.clear(), computed.clear(), blocks.clear(), child_seeds.clear();
    for (const auto& id : so.finished_req_ids)
      tokens.erase(id), computed.erase(id), blocks.erase(id), child_seeds.erase(id);
    for (const auto& id : so.preempted_req_ids) {
      REQUIRE(tokens.count(id));
      tokens.erase(id), computed.erase(id), blocks.erase(id), child_seeds.erase(id);
    }
    for (const auto& d : so.scheduled_new_reqs) {
      REQUIRE(!tokens.count(d.req_id));
      auto all = d.prompt_token_ids;
      all.insert(all.end(), d.output_token_ids.begin(), d.output_token_ids.end());
      tokens[d.req_id] = all;
      computed[d.req_id] = d.num_computed_tokens;
      blocks[d.req_id] = d.block_ids;
      seeds[d.req_id] = d.seed;
      if (!d.child_seeds.empty()) child_seeds[d.req_id] = d.child_seeds;
    }
    for (const auto& [src, dst] : so.block_copies) kv[dst] = kv[src];
    for (const auto& d : so.scheduled_cached_reqs) {
      REQUIRE(tokens.count(d.req_id));
      REQUIRE(computed[d.req_id] == d.num_computed_tokens);
      auto& held = blocks[d.req_id];
      for (size_t g = 0; g < d.new_block_ids.size(); ++g)
        held[g].insert(held[g].end(), d.new_block_ids[g].begin(), d.new_block_ids[g].end());
    }
    ModelRunnerOutput out;
    out.step_id = so.step_id;
    int total = 0;
    // As in a real pass, every token's KV is written before any attention reads: a block that joined the
    // prefix cache in this step is whole for a request that hit it in the same step.
    for (const auto& [id, n] : so.num_scheduled_tokens) {
      const auto& seq = tokens.at(id);
      const int c = computed[id];
      REQUIRE(c + n <= int(seq.size()));
      REQUIRE(blocks[id].size() == windows.size());
      for (const auto& table : blocks[id]) {
        REQUIRE(int(table.size()) * 16 >= c + n);  // the tests use block size 16
        for (int p = c; p < c + n; ++p) kv[table[size_t(p / 16)]][p % 16] = seq[p];
      }
    }
    for (const auto& [id, n] : so.num_scheduled_tokens) {
      auto& seq = tokens.at(id);
      int& c = computed[id];
      for (size_t g = 0; g < windows.size(); ++g) {
        const auto& table = blocks[id][g];
        const int first = windows[g] > 0 ? std::max(0, c - windows[g] + 1) : 0;  // what its first query sees
        for (int p = first; p < c; ++p)
          if (kv[table[size_t(p / 16)]][p % 16] !=
              seq[p]) {  // the KV it reads is not its own (no REQUIRE per slot: speed)
            CAPTURE(id, g, p, c);
            FAIL("request reads a KV slot it did not compute");
          }
      }
      c += n;
      total += n;
      if (c == int(seq.size()) && child_seeds.count(id)) {  // the delayed split: one first token per child
        std::vector<int> firsts;
        for (uint64_t s : child_seeds[id]) firsts.push_back(next_token(seq, s));
        child_seeds.erase(id);
        seq.push_back(firsts[0]);
        out.add_entry(firsts);
      } else if (c == int(seq.size())) {
        seq.push_back(next_token(seq, seeds[id]));
        out.add_entry(std::span<const int>(&seq.back(), 1));
      } else {
        out.add_entry({});
      }
    }
    REQUIRE(total == so.total_num_scheduled_tokens);
    return out;
  }
};

inline SchedulerConfig config(int num_blocks, int budget = 64) {
  SchedulerConfig c;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = 16;
  c.max_model_len = 512;
  c.block_size = 16;
  c.num_kv_blocks = num_blocks;
  c.eos_token_ids = {2};
  return c;
}

inline std::vector<int> prompt_of(int len, int salt) {
  std::vector<int> p;
  for (int i = 0; i < len; ++i) p.push_back(10 + (i * 7 + salt * 13) % 300);
  return p;
}

inline Request make_request(const std::string& id, std::vector<int> prompt, int max_tokens) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return Request(id, std::move(prompt), p, 0);
}

struct Run {
  std::map<std::string, std::vector<int>> outputs;
  std::map<std::string, FinishReason> finish;
  int steps = 0;
};

inline void collect(Run& run, const std::vector<EngineCoreOutput>& outputs) {
  for (const auto& o : outputs) {
    auto& out = run.outputs[o.req_id];
    out.insert(out.end(), o.new_token_ids.begin(), o.new_token_ids.end());
    if (o.finished()) run.finish[o.req_id] = o.finish_reason;
  }
}

// Steps until nothing is live, with up to `steps_in_flight` steps planned before the oldest one's output
// is folded back (2: async scheduling, in the scheduler actor's order); checks the pool after every step
// and that nothing is left: no block, no request, no placeholder or stale output.
inline Run run_all(Scheduler& s, FakeWorker& w, size_t steps_in_flight = 1) {
  Run run;
  std::deque<std::pair<SchedulerOutput, ModelRunnerOutput>> in_flight;
  auto live = [&] { return s.has_unfinished_requests() || s.has_pending_finished(); };
  while (live() || !in_flight.empty()) {
    while (in_flight.size() < steps_in_flight && live()) {
      SchedulerOutput so = s.schedule();
      if (!so.has_work()) break;
      REQUIRE(++run.steps < 10000);
      REQUIRE(so.total_num_scheduled_tokens <= s.config().max_num_batched_tokens);
      ModelRunnerOutput mro = w.execute(so);
      in_flight.emplace_back(std::move(so), std::move(mro));
    }
    if (in_flight.empty()) break;
    collect(run, s.update_from_output(in_flight.front().first, in_flight.front().second));
    in_flight.pop_front();
    s.kv_cache_manager().block_pool().check_invariants();
  }
  REQUIRE(s.kv_cache_manager().block_pool().num_used() == 0);
  REQUIRE(s.kv_cache_manager().num_requests() == 0);
  REQUIRE(s.num_stale_outputs() == 0);
  return run;
}

// An n-sample request: children "<id>.0" .. "<id>.<n-1>", child i seeded seed + i.
inline Request parallel_request(const std::string& id, std::vector<int> prompt, int n, int max_tokens, uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.n = n;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  Request r(id + ".0", std::move(prompt), p, seed);
  for (int i = 0; i < n; ++i)
    r.child_req_ids.push_back(id + "." + std::to_string(i)), r.child_seeds.push_back(seed + uint64_t(i));
  return r;
}

}  // namespace parley::fakes
