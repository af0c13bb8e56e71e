// Runs a set of requests through EngineCore on a real model and keeps what the feature-on-versus-off
// tests compare: token ids, logprobs, prompt logprobs and finish reasons per request, and the scheduler's
// counters. Every run must end with no block used, no batch row and no stale output left.
#pragma once
#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_core.hpp"
#include "model/cuda/cuda_model.hpp"
#include "model/tokenizer.hpp"
#include "test_support.hpp"

namespace parley::test {

// Requests covering the sampler's per-request state over the given prompts (two requests each): greedy
// and seeded, min_tokens with EOS, stop_token_ids, penalties, logprobs, and an n = 3 request split after
// one prefill (children "n.0".."n.2").
inline std::vector<Request> mixed_requests(const Tokenizer& tok, const std::vector<std::string>& prompts) {
  std::vector<Request> reqs;
  for (int i = 0; i < 2 * int(prompts.size()); ++i) {
    SamplingParams p;
    p.temperature = i % 2 ? 0.8f : 0.0f;
    p.max_tokens = 20 + i * 9;
    p.ignore_eos = i % 3 == 0;
    p.min_tokens = i == 2 ? 30 : 0;
    if (i == 3) p.stop_token_ids = {tok.encode(" the", false).at(0)};
    if (i == 4) p.frequency_penalty = 0.5f, p.presence_penalty = 0.3f, p.repetition_penalty = 1.2f;
    if (i % 3 == 1) p.logprobs = 2;
    reqs.emplace_back("m" + std::to_string(i), tok.encode(prompts[size_t(i) % prompts.size()], true), p,
                      77 + uint64_t(i));
  }
  Request parent = reqs[1];
  parent.request_id = "n.0";
  parent.sampling_params.n = 3;
  for (int i = 0; i < 3; ++i)
    parent.child_req_ids.push_back("n." + std::to_string(i)), parent.child_seeds.push_back(900 + uint64_t(i));
  parent.seed = 900;
  reqs.push_back(parent);
  return reqs;
}

// Greedy requests "r0", "r1", ... for each llama2.c reference prompt, as long as run.c -n 256 ran them.
inline std::vector<Request> greedy_reference_requests() {
  std::vector<Request> reqs;
  const auto refs = greedy_references();
  for (size_t i = 0; i < refs.size(); ++i) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = 257 - int(refs[i].prompt_ids.size());  // run.c -n 256 counts prompt positions
    reqs.emplace_back("r" + std::to_string(i), refs[i].prompt_ids, p, 0);
  }
  return reqs;
}

// The device model's limits for a scheduler configuration: its blocks, budget, sequences and context;
// graphs of query_len tokens per sequence up to max_graph_batch sequences (0: none).
inline cuda::DeviceLlamaOptions device_options(const SchedulerConfig& c, int max_graph_batch, int query_len = 1) {
  cuda::DeviceLlamaOptions o;
  o.num_blocks = c.num_kv_blocks;
  o.block_size = c.block_size;
  o.max_num_tokens = c.max_num_batched_tokens;
  o.max_num_seqs = c.max_num_seqs;
  o.max_model_len = c.max_model_len;
  o.graph_query_len = query_len;
  o.graph_batch_sizes = cuda::graph_batch_sizes(max_graph_batch);
  return o;
}

// A scheduler configuration for the loaded model: its context, EOS and vocabulary, this many blocks.
inline SchedulerConfig model_scheduler_config(const Loaded& m, int num_kv_blocks) {
  SchedulerConfig c;
  c.max_model_len = m.model.config().max_seq_len;
  c.num_kv_blocks = num_kv_blocks;
  c.eos_token_ids = m.engine_options().stop_token_ids;
  c.vocab_size = m.model.config().vocab_size;
  return c;
}

struct CoreRun {
  std::map<std::string, std::vector<int>> tokens;
  std::map<std::string, std::vector<float>> logprobs;
  std::map<std::string, std::vector<TokenLogprobs>> sampled_logprobs;  // the same in full: rank and top alternatives
  std::map<std::string, std::vector<TokenLogprobs>> prompt_logprobs;   // what each first output carried (none: absent)
  std::map<std::string, FinishReason> finish;
  SchedulerStats stats;
};

// Adds one output to the run: prompt logprobs come once, with the first token.
inline void record(CoreRun& run, const EngineCoreOutput& o) {
  auto& t = run.tokens[o.req_id];
  if (!o.prompt_logprobs.empty()) {
    REQUIRE(t.empty());
    run.prompt_logprobs[o.req_id] = o.prompt_logprobs;
  }
  t.insert(t.end(), o.new_token_ids.begin(), o.new_token_ids.end());
  for (const auto& lp : o.new_logprobs) run.logprobs[o.req_id].push_back(lp.logprob);
  auto& full = run.sampled_logprobs[o.req_id];
  full.insert(full.end(), o.new_logprobs.begin(), o.new_logprobs.end());
  if (o.finished()) run.finish[o.req_id] = o.finish_reason;
}

// Runs the requests to the end on a built core (async_scheduling as the core was built).
inline CoreRun run_to_end(EngineCore& core, std::vector<Request> reqs, bool async_scheduling) {
  for (Request& r : reqs) core.add_request(std::move(r));
  CoreRun run;
  for (int steps = 0; core.has_unfinished_requests(); ++steps) {
    REQUIRE(steps < 5000);
    for (const EngineCoreOutput& o : core.step()) record(run, o);
    core.scheduler().kv_cache_manager().block_pool().check_invariants();
    if (!async_scheduling) {
      // Blocks of rejected draft positions are not kept beyond the next step's need: a request holds at most
      // the blocks for its computed tokens plus one more decode step's 1 + k tokens and lookahead.
      const SchedulerConfig& sc = core.scheduler().config();
      for (const Request* r : core.scheduler().requests()) {
        const int next = std::min(r->num_computed_tokens + 1 + sc.num_speculative_tokens + sc.num_lookahead_tokens,
                                  sc.max_model_len);
        for (const auto& table : core.scheduler().kv_cache_manager().block_ids(r->request_id))
          REQUIRE(int(table.size()) <= core.scheduler().kv_cache_manager().num_blocks_needed(next));
      }
    }
  }
  core.step();  // the worker drops the last finished rows
  REQUIRE(core.scheduler().kv_cache_manager().block_pool().num_used() == 0);
  REQUIRE(core.scheduler().num_stale_outputs() == 0);
  REQUIRE(core.runner().input_batch().num_reqs() == 0);
  run.stats = core.scheduler().stats();
  return run;
}

inline CoreRun run_core(LlamaModel& model, std::vector<Request> reqs, const SchedulerConfig& c, bool async_scheduling,
                        const std::optional<SpeculativeConfig>& spec = std::nullopt, const Vocab* vocab = nullptr) {
  EngineCore core(model, c, async_scheduling, spec, vocab);
  return run_to_end(core, std::move(reqs), async_scheduling);
}

// The same on another device's model (CUDA, or its host emulation).
inline CoreRun run_core(std::unique_ptr<DeviceModel> device, std::vector<Request> reqs, const SchedulerConfig& c,
                        bool async_scheduling, const std::optional<SpeculativeConfig>& spec = std::nullopt) {
  EngineCore core(std::move(device), c, async_scheduling, spec);
  return run_to_end(core, std::move(reqs), async_scheduling);
}

// A feature-on run gives every request what the feature-off run gave: token ids, logprobs, finish reasons.
inline void require_same_outputs(const CoreRun& on, const CoreRun& off) {
  REQUIRE(on.tokens == off.tokens);
  REQUIRE(on.logprobs == off.logprobs);
  REQUIRE(on.finish == off.finish);
  REQUIRE(on.prompt_logprobs == off.prompt_logprobs);
}

}  // namespace parley::test
