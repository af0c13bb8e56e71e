// The differential suites on one model: batching, chunked prefill, preemption, prefix-cache hits, async
// scheduling and exact speculation each give the token ids and logprobs of a plain run, on prompts longer
// than every tiny sliding window. Every architecture and every weight type runs them.
#pragma once
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine_core_runs.hpp"
#include "model/llama.hpp"
#include "model/model_file.hpp"

namespace parley::test {

// Prompts sharing a 40-token prefix (longer than every window and than two blocks), some repeating themselves
// so the n-gram proposer drafts.
inline std::vector<Request> arch_requests(const Tokenizer& tok) {
  const std::string shared =
      "Once upon a time, there was a little girl named Lily. She liked to play in the park with her dog ";
  return mixed_requests(tok, {shared + "and her friend Tom.", shared + "every day. Every day, every day, every day.",
                              shared + "Max. Max was big. Max was big.", "The sun was hot."});
}

// num_kv_blocks per KV group (model/kv_cache_layout.hpp), so that every architecture is as short of blocks.
inline SchedulerConfig suite_config(const ModelFile& file, int num_kv_blocks, bool caching) {
  SchedulerConfig c;
  c.max_model_len = file.config.max_seq_len;
  const KvCacheLayout layout = KvCacheLayout::for_model(file.config);
  c.num_kv_blocks = num_kv_blocks * layout.num_groups() + (layout.has_sliding_window() ? 1 : 0);
  c.eos_token_ids = {file.vocab->eos_id};
  c.vocab_size = file.config.vocab_size;
  c.enable_prefix_caching = caching;
  return c;
}

inline void require_differential_suite(LlamaModel& model, const ModelFile& file) {
  const Tokenizer tok(*file.vocab);
  const auto reqs = arch_requests(tok);
  auto config = [&](int blocks, bool caching) { return suite_config(file, blocks, caching); };
  const CoreRun off = run_core(model, reqs, config(256, false), false);
  REQUIRE(off.tokens.size() == 11);  // 8 requests and the n = 3 split
  for (const Request& r : reqs) {    // each request alone equals the batch
    const CoreRun alone = run_core(model, {r}, config(256, false), false);
    for (const auto& [id, tokens] : alone.tokens) REQUIRE(tokens == off.tokens.at(id));
  }
  SchedulerConfig chunked = config(256, false);
  chunked.max_num_batched_tokens = 24;
  chunked.long_prefill_token_threshold = 7;
  require_same_outputs(run_core(model, reqs, chunked, false), off);

  const CoreRun preempted = run_core(model, reqs, config(14, true), false);
  require_same_outputs(preempted, off);
  REQUIRE(preempted.stats.num_preemptions > 0);

  // A second round on the same core reads the first round's cached blocks.
  EngineCore core(model, config(256, true), false);
  run_to_end(core, reqs, false);
  std::vector<Request> again = reqs;
  for (Request& r : again) {
    r.request_id += "'";
    for (std::string& child : r.child_req_ids) child += "'";
  }
  const CoreRun hits = run_to_end(core, again, false);
  REQUIRE(hits.stats.prefix_cache_hits > 0);
  for (const auto& [id, tokens] : off.tokens) REQUIRE(hits.tokens.at(id + "'") == tokens);

  require_same_outputs(run_core(model, reqs, config(256, true), true), off);
  const auto ngram =
      SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2})");
  const CoreRun spec = run_core(model, reqs, config(256, true), false, ngram);
  require_same_outputs(spec, off);
  REQUIRE(spec.stats.spec_num_accepted_tokens > 0);
}

}  // namespace parley::test
