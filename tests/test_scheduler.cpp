// The scheduler and KV cache manager driven by a fake worker (no model, no CAF): budgets, chunked
// prefill, prefix caching, preemption by recompute, aborts, stop conditions, and no leaked block.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "fake_worker.hpp"

namespace parley {
using namespace fakes;

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

TEST_CASE("a decode step inside the request's last block carries no block ids and one that opens a block carries it",
          "[scheduler]") {
  Scheduler s(config(64, 64));
  FakeWorker w;
  s.add_request(make_request("r", prompt_of(20, 1), 20));  // 20 prompt tokens: blocks of 16 positions
  std::vector<size_t> groups_carried;                      // per decode step: the KV groups its ids name
  while (s.has_unfinished_requests()) {
    const SchedulerOutput so = s.schedule();
    for (const CachedRequestData& c : so.scheduled_cached_reqs) {
      groups_carried.push_back(c.new_block_ids.size());
      if (!c.new_block_ids.empty()) REQUIRE(c.new_block_ids[0].size() == 1);
    }
    s.update_from_output(so, w.execute(so));
  }
  // Decode steps compute positions 20..38: only position 32 opens a block.
  REQUIRE(groups_carried.size() == 19);
  for (size_t i = 0; i < groups_carried.size(); ++i) REQUIRE(groups_carried[i] == (20 + i == 32 ? 1u : 0u));
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
  REQUIRE(s.stats().num_running == 2);
  REQUIRE(s.stats().num_waiting == 1);
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

TEST_CASE("delayed split: preempted children, a prompt on a block boundary, and the split turned off",
          "[scheduler][split]") {
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

TEST_CASE("delayed split: with no block free for a child's partial copy, the child waits and recomputes",
          "[scheduler][split]") {
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
  REQUIRE(prefill_tight ==
          20 + 2 * 4);  // each waiting child recomputes its partial block (the full one is a cache hit)
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
