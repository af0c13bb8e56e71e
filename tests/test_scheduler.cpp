// The scheduler and KV cache manager driven by a fake worker (no model, no CAF): budgets, chunked
// prefill, prefix caching, preemption by recompute, aborts, stop conditions, and no leaked block.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "engine/scheduler.hpp"

namespace parley {
namespace {

// Plays the worker: mirrors each request's tokens from the SchedulerOutputs alone and "samples" a token
// that is a function of every token before it and the request's seed, as a real model's draw is. Its
// fake KV cache stores the token id each slot was computed from, so a request reading a slot it did not
// fill (a wrong block table, a shared block overwritten, a missing copy-on-write) fails at once.
struct FakeWorker {
  std::map<std::string, std::vector<int>> tokens;  // prompt + output as the worker knows them
  std::map<std::string, int> computed;
  std::map<std::string, std::vector<int>> blocks;
  std::map<std::string, uint64_t> seeds;
  std::map<std::string, std::vector<uint64_t>> child_seeds;  // parents awaiting their split
  std::map<int, std::map<int, int>> kv;                      // block -> slot -> token id computed there

  static int next_token(const std::vector<int>& seq, uint64_t seed = 0) {
    uint64_t h = 1469598103934665603ull ^ seed;
    for (int t : seq) h = (h ^ uint64_t(t)) * 1099511628211ull;
    return 3 + int(h % 400);
  }

  ModelRunnerOutput execute(const SchedulerOutput& so) {
    for (const auto& id : so.finished_req_ids) tokens.erase(id), computed.erase(id), blocks.erase(id), child_seeds.erase(id);
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
      blocks[d.req_id].insert(blocks[d.req_id].end(), d.new_block_ids.begin(), d.new_block_ids.end());
    }
    ModelRunnerOutput out;
    out.step_id = so.step_id;
    int total = 0;
    for (const auto& [id, n] : so.num_scheduled_tokens) {
      auto& seq = tokens.at(id);
      int& c = computed[id];
      REQUIRE(c + n <= int(seq.size()));
      REQUIRE(int(blocks[id].size()) * 16 >= c + n);  // the tests use block size 16
      for (int p = 0; p < c; ++p) REQUIRE(kv[blocks[id][p / 16]][p % 16] == seq[p]);  // the KV it reads is its own
      for (int p = c; p < c + n; ++p) kv[blocks[id][p / 16]][p % 16] = seq[p];
      c += n;
      total += n;
      out.req_ids.push_back(id);
      if (c == int(seq.size()) && child_seeds.count(id)) {  // the delayed split: one first token per child
        std::vector<int> firsts;
        for (uint64_t s : child_seeds[id]) firsts.push_back(next_token(seq, s));
        child_seeds.erase(id);
        seq.push_back(firsts[0]);
        out.sampled_token_ids.push_back(firsts);
      } else if (c == int(seq.size())) {
        seq.push_back(next_token(seq, seeds[id]));
        out.sampled_token_ids.push_back({seq.back()});
      } else {
        out.sampled_token_ids.push_back({});
      }
      out.logprobs.emplace_back();  // none asked
    }
    REQUIRE(total == so.total_num_scheduled_tokens);
    return out;
  }
};

SchedulerConfig config(int num_blocks, int budget = 64) {
  SchedulerConfig c;
  c.max_num_batched_tokens = budget;
  c.max_num_seqs = 16;
  c.max_model_len = 512;
  c.block_size = 16;
  c.num_kv_blocks = num_blocks;
  c.eos_token_ids = {2};
  return c;
}

std::vector<int> prompt_of(int len, int salt) {
  std::vector<int> p;
  for (int i = 0; i < len; ++i) p.push_back(10 + (i * 7 + salt * 13) % 300);
  return p;
}

Request make_request(const std::string& id, std::vector<int> prompt, int max_tokens) {
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

// Steps until nothing is live; checks the pool after every step.
Run run_all(Scheduler& s, FakeWorker& w) {
  Run run;
  while (s.has_unfinished_requests() || s.has_pending_finished()) {
    REQUIRE(++run.steps < 10000);
    const SchedulerOutput so = s.schedule();
    REQUIRE(so.total_num_scheduled_tokens <= s.config().max_num_batched_tokens);
    for (const auto& o : s.update_from_output(so, w.execute(so))) {
      auto& out = run.outputs[o.req_id];
      out.insert(out.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      if (o.finished()) run.finish[o.req_id] = o.finish_reason;
    }
    s.kv_cache_manager().block_pool().check_invariants();
  }
  REQUIRE(s.kv_cache_manager().block_pool().num_used() == 0);
  REQUIRE(s.kv_cache_manager().num_requests() == 0);
  return run;
}

}  // namespace

TEST_CASE("scheduler runs requests to max_tokens within the token budget and frees every block", "[scheduler]") {
  Scheduler s(config(64, 40));
  FakeWorker w;
  for (int i = 0; i < 5; ++i) s.add_request(make_request("r" + std::to_string(i), prompt_of(30 + i * 11, i), 9));
  const Run run = run_all(s, w);
  REQUIRE(run.outputs.size() == 5);
  for (const auto& [id, out] : run.outputs) {
    REQUIRE(out.size() == 9);
    REQUIRE(run.finish.at(id) == FinishReason::Length);
  }
  // 30+41+52+63+74 = 260 prompt tokens in chunks of at most 40 per step: at least 7 prefill steps.
  REQUIRE(run.steps >= 7 + 8);
  REQUIRE(s.stats().prefill_tokens_computed == 260);
  REQUIRE(s.stats().num_preemptions == 0);
}

TEST_CASE("a request's tokens do not depend on its company or on preemption", "[scheduler]") {
  auto outputs = [](int num_blocks, int budget) {
    Scheduler s(config(num_blocks, budget));
    FakeWorker w;
    for (int i = 0; i < 8; ++i) s.add_request(make_request("r" + std::to_string(i), prompt_of(20 + i * 5, i), 40));
    Run run = run_all(s, w);
    return std::make_pair(run.outputs, s.stats().num_preemptions);
  };
  const auto [alone_like, p_big] = outputs(512, 512);
  const auto [tight, p_small] = outputs(12, 32);  // 12 blocks of 16: three requests at most
  REQUIRE(p_big == 0);
  REQUIRE(p_small > 0);
  REQUIRE(tight == alone_like);
  for (const auto& [id, out] : tight) REQUIRE(out.size() == 40);
}

TEST_CASE("prefix caching: a repeated prompt computes only its last block", "[scheduler]") {
  Scheduler s(config(64, 256));
  FakeWorker w;
  const auto prompt = prompt_of(100, 3);  // 6 full blocks + 4 tokens
  s.add_request(make_request("a", prompt, 4));
  const Run first = run_all(s, w);
  REQUIRE(s.stats().prefill_tokens_computed == 100);
  s.add_request(make_request("b", prompt, 4));
  const Run second = run_all(s, w);
  REQUIRE(s.stats().prefill_tokens_computed == 100 + 4);  // 96 tokens hit: only the partial block is computed
  REQUIRE(s.stats().prefix_cache_hits == 96);
  REQUIRE(s.stats().prefix_cache_queries == 200);
  REQUIRE(second.outputs.at("b") == first.outputs.at("a"));
  // A prompt of exactly 6 blocks recomputes its last block: the last token's logits are needed.
  s.add_request(make_request("c", std::vector<int>(prompt.begin(), prompt.begin() + 96), 2));
  run_all(s, w);
  REQUIRE(s.stats().prefill_tokens_computed == 104 + 16);
}

TEST_CASE("aborts free blocks at once and tell the worker", "[scheduler]") {
  Scheduler s(config(64, 64));
  FakeWorker w;
  s.add_request(make_request("a", prompt_of(40, 1), 50));
  s.add_request(make_request("b", prompt_of(40, 2), 50));
  s.add_request(make_request("c", prompt_of(40, 3), 50));
  SchedulerOutput so = s.schedule();
  s.update_from_output(so, w.execute(so));
  REQUIRE(s.num_running() == 2);  // 64-token budget: a then 24 tokens of b; c waits
  REQUIRE(s.finish_requests({"b", "c", "nope"}, RequestStatus::FinishedAborted) == std::vector<std::string>{"b", "c"});
  REQUIRE(s.kv_cache_manager().block_pool().num_used() == 3);  // a's 40 tokens
  so = s.schedule();
  REQUIRE(so.finished_req_ids == std::vector<std::string>{"b"});  // c never reached the worker
  s.update_from_output(so, w.execute(so));
  REQUIRE(s.finish_requests({"a"}, RequestStatus::FinishedAborted).size() == 1);
  run_all(s, w);
  REQUIRE(w.tokens.empty());
}

TEST_CASE("stop conditions: EOS, stop_token_ids, min_tokens, ignore_eos", "[scheduler]") {
  // The fake worker's token after prompt {5} is fixed: use it as the "EOS" to test each rule.
  const int first = FakeWorker::next_token({5});
  auto run_one = [&](SamplingParams p, std::vector<int> eos) {
    SchedulerConfig c = config(64);
    c.eos_token_ids = std::move(eos);
    Scheduler s(c);
    FakeWorker w;
    s.add_request(Request("x", {5}, p, 0));
    Run run = run_all(s, w);
    return std::make_pair(run.outputs.at("x"), run.finish.at("x"));
  };
  SamplingParams p;
  p.max_tokens = 5;
  auto [out, why] = run_one(p, {first});
  REQUIRE(out == std::vector<int>{first});
  REQUIRE(why == FinishReason::Stop);
  p.ignore_eos = true;
  std::tie(out, why) = run_one(p, {first});
  REQUIRE(out.size() == 5);
  REQUIRE(why == FinishReason::Length);
  p.stop_token_ids = {first};
  std::tie(out, why) = run_one(p, {});
  REQUIRE(out.size() == 1);
  REQUIRE(why == FinishReason::Stop);
  p.min_tokens = 3;  // the stop token is ignored until three tokens are out
  std::tie(out, why) = run_one(p, {});
  REQUIRE(out.size() >= 3);
  REQUIRE(out[0] == first);
}

TEST_CASE("admission limits: queue bound, max_num_seqs, impossible requests", "[scheduler]") {
  SchedulerConfig c = config(8);
  c.max_waiting = 2;
  c.max_num_seqs = 1;
  Scheduler s(c);
  s.add_request(make_request("a", prompt_of(10, 1), 4));
  s.add_request(make_request("b", prompt_of(10, 2), 4));
  REQUIRE_THROWS_AS(s.add_request(make_request("c", prompt_of(10, 3), 4)), Scheduler::QueueFull);
  REQUIRE_THROWS_WITH(s.add_request(make_request("a", prompt_of(10, 3), 4)), Catch::Contains("already in use"));
  REQUIRE_THROWS_WITH(s.add_request(make_request("d", prompt_of(100, 3), 100)), Catch::Contains("KV blocks"));
  REQUIRE_THROWS_WITH(s.add_request(make_request("e", prompt_of(600, 3), 1)), Catch::Contains("context"));
  FakeWorker w;
  const SchedulerOutput so = s.schedule();
  REQUIRE(so.scheduled_new_reqs.size() == 1);
  s.update_from_output(so, w.execute(so));
  run_all(s, w);
}

namespace {

// An n-sample request: children "<id>.0" .. "<id>.<n-1>", child i seeded seed + i.
Request parallel_request(const std::string& id, std::vector<int> prompt, int n, int max_tokens, uint64_t seed) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.n = n;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  Request r(id + ".0", std::move(prompt), p, seed);
  for (int i = 0; i < n; ++i) r.child_req_ids.push_back(id + "." + std::to_string(i)), r.child_seeds.push_back(seed + uint64_t(i));
  return r;
}

}  // namespace

TEST_CASE("delayed split: one prefill, children equal n = 1 requests seeded seed + i", "[scheduler][split]") {
  const auto prompt = prompt_of(300, 5);  // 18 full blocks and 12 tokens
  SchedulerConfig c = config(256, 512);
  Scheduler split(c);
  FakeWorker w;
  split.add_request(parallel_request("p", prompt, 8, 40, 1000));
  const Run got = run_all(split, w);
  REQUIRE(split.stats().prefill_tokens_computed == 300);  // not 8 x 300, not 300 + 7 x the partial block
  REQUIRE(split.stats().num_splits == 1);
  // Peak: the prompt's 19 blocks once, plus per child its partial-block copy and its outputs' blocks.
  REQUIRE(split.stats().peak_used_blocks <= 19 + 8 * ((12 + 40 + 15) / 16 + 1));
  REQUIRE(split.stats().peak_used_blocks < 8 * 19);

  Scheduler separate(c);
  FakeWorker w2;
  for (int i = 0; i < 8; ++i) {
    Request r = make_request("p." + std::to_string(i), prompt, 40);
    r.sampling_params.temperature = 0.8f;
    r.seed = 1000 + uint64_t(i);
    separate.add_request(std::move(r));
  }
  const Run want = run_all(separate, w2);
  REQUIRE(got.outputs == want.outputs);
  REQUIRE(got.outputs.size() == 8);
  for (const auto& [id, out] : got.outputs) REQUIRE(out.size() == 40);
  REQUIRE(got.outputs.at("p.0") != got.outputs.at("p.1"));  // the seeds differ
}

TEST_CASE("delayed split: preempted children, a prompt on a block boundary, and the split turned off", "[scheduler][split]") {
  auto outputs = [](SchedulerConfig c, std::vector<int> prompt) {
    Scheduler s(c);
    FakeWorker w;
    s.add_request(parallel_request("p", prompt, 6, 50, 7));
    s.add_request(parallel_request("q", prompt_of(20, 9), 3, 30, 70));
    Run run = run_all(s, w);
    return std::make_tuple(run.outputs, s.stats().num_preemptions, s.stats().prefill_tokens_computed);
  };
  for (int len : {64, 70}) {
    const auto prompt = prompt_of(len, 2);
    SchedulerConfig big = config(512, 512);
    const auto [want, p0, prefill] = outputs(big, prompt);
    REQUIRE(p0 == 0);
    REQUIRE(prefill == len + 20);
    SchedulerConfig small = config(14, 64);  // 14 blocks: children are preempted and recomputed
    const auto [got, p1, prefill_small] = outputs(small, prompt);
    REQUIRE(p1 > 0);
    REQUIRE(got == want);
    SchedulerConfig off = big;
    off.enable_delayed_split = false;
    off.enable_prefix_caching = false;
    const auto [independent, p2, prefill_off] = outputs(off, prompt);
    REQUIRE(independent == want);
    REQUIRE(prefill_off == 6 * len + 3 * 20);
  }
}

TEST_CASE("delayed split: with no block free for a child's partial copy, the child waits and recomputes", "[scheduler][split]") {
  auto run_with = [](int num_blocks) {
    Scheduler s(config(num_blocks, 64));
    FakeWorker w;
    s.add_request(parallel_request("p", prompt_of(20, 4), 3, 4, 11));  // 1 full block + 4 tokens; 24 tokens at most
    Run run = run_all(s, w);
    return std::make_pair(run.outputs, s.stats().prefill_tokens_computed);
  };
  const auto [want, prefill_big] = run_with(64);
  const auto [got, prefill_tight] = run_with(2);  // the parent holds both blocks when it splits
  REQUIRE(got == want);
  REQUIRE(prefill_big == 20);
  REQUIRE(prefill_tight == 20 + 2 * 4);  // each waiting child recomputes its partial block (the full one is a cache hit)
}

TEST_CASE("delayed split: aborting the parent before its split reports every child", "[scheduler][split]") {
  Scheduler s(config(64, 16));
  FakeWorker w;
  s.add_request(parallel_request("p", prompt_of(40, 1), 4, 10, 3));
  SchedulerOutput so = s.schedule();  // 16 of 40 prompt tokens
  s.update_from_output(so, w.execute(so));
  REQUIRE(s.stats().num_running == 1);
  REQUIRE(s.finish_requests({"p.0"}, RequestStatus::FinishedAborted) ==
          std::vector<std::string>{"p.0", "p.1", "p.2", "p.3"});
  run_all(s, w);
  // After the split each child is its own request; one user request still counts once.
  s.add_request(parallel_request("r", prompt_of(10, 1), 4, 10, 3));
  so = s.schedule();
  REQUIRE(s.update_from_output(so, w.execute(so)).size() == 4);
  REQUIRE(s.num_running() == 4);
  REQUIRE(s.stats().num_running == 1);
  REQUIRE(s.finish_requests({"r.2"}, RequestStatus::FinishedAborted) == std::vector<std::string>{"r.2"});
  const Run rest = run_all(s, w);
  REQUIRE(rest.outputs.size() == 3);
}

}  // namespace parley
