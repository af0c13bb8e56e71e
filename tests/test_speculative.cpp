// Speculative decoding through EngineCore on stories260K (MISSION C5, C10): n-gram drafts verified exactly
// give the token ids and logprobs speculation off gives, greedy and seeded, alone and batched, with n > 1,
// penalties, min_tokens and preemption; with padding every decode step is uniform, without it not.
#include <catch2/catch.hpp>

#include <map>

#include "engine/engine_core.hpp"
#include "model/tokenizer.hpp"
#include "test_support.hpp"

namespace parley {
namespace {

// Prompts that repeat themselves, so the n-gram proposer finds matches, and stories260K's own loops.
std::vector<Request> spec_requests(const Tokenizer& tok) {
  const char* prompts[] = {
      "Once upon a time, there was a little girl named Lily. Once upon a time, there was a little",
      "The cat sat on the mat. The dog sat on the mat. The bird sat on the",
      "Tom had a red ball. Tom had a red ball. Tom had a",
      "One day, a big dog went to the park.",
  };
  std::vector<Request> reqs;
  for (int i = 0; i < 8; ++i) {
    SamplingParams p;
    p.temperature = i % 2 ? 0.8f : 0.0f;
    p.max_tokens = 24 + i * 7;
    p.ignore_eos = i % 3 == 0;
    p.min_tokens = i == 2 ? 20 : 0;
    if (i == 5) p.frequency_penalty = 0.4f, p.repetition_penalty = 1.1f;
    if (i % 3 == 1) p.logprobs = 2;
    reqs.emplace_back("s" + std::to_string(i), tok.encode(prompts[i % 4], true), p, 31 + uint64_t(i));
  }
  Request parent = reqs[1];
  parent.request_id = "n.0";
  parent.sampling_params.n = 3;
  for (int i = 0; i < 3; ++i) parent.child_req_ids.push_back("n." + std::to_string(i)), parent.child_seeds.push_back(500 + uint64_t(i));
  parent.seed = 500;
  reqs.push_back(parent);
  return reqs;
}

struct SpecRun {
  std::map<std::string, std::vector<int>> tokens;
  std::map<std::string, std::vector<float>> logprobs;
  std::map<std::string, FinishReason> finish;
  SchedulerStats stats;
};

SpecRun run_spec(LlamaModel& model, std::vector<Request> reqs, SchedulerConfig c, const std::optional<SpeculativeConfig>& spec) {
  EngineCore core(model, c, false, spec);
  for (Request& r : reqs) core.add_request(std::move(r));
  SpecRun run;
  for (int steps = 0; core.has_unfinished_requests(); ++steps) {
    REQUIRE(steps < 5000);
    for (const EngineCoreOutput& o : core.step()) {
      auto& t = run.tokens[o.req_id];
      t.insert(t.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      for (const auto& lp : o.new_logprobs) run.logprobs[o.req_id].push_back(lp.logprob);
      if (o.finished()) run.finish[o.req_id] = o.finish_reason;
    }
    core.scheduler().kv_cache_manager().block_pool().check_invariants();
  }
  core.step();  // the worker drops the last finished rows
  REQUIRE(core.scheduler().kv_cache_manager().block_pool().num_used() == 0);
  REQUIRE(core.runner().input_batch().num_reqs() == 0);
  run.stats = core.scheduler().stats();
  return run;
}

SpeculativeConfig ngram(int k, bool pad = true) {
  return SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": )" + std::to_string(k) +
                                  R"(, "prompt_lookup_min": 2, "prompt_lookup_max": 4, "pad_uniform": )" + (pad ? "true" : "false") + "}");
}

}  // namespace

TEST_CASE("speculative decoding: exact n-gram verification changes no token", "[spec][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  SchedulerConfig base;
  base.max_model_len = m.model.config().max_seq_len;
  base.num_kv_blocks = 256;
  base.eos_token_ids = m.engine_options().stop_token_ids;
  base.vocab_size = m.model.config().vocab_size;
  SchedulerConfig tight = base;
  tight.num_kv_blocks = 10;  // preemption
  for (const SchedulerConfig& c : {base, tight}) {
    CAPTURE(c.num_kv_blocks);
    const SpecRun off = run_spec(m.model, spec_requests(tok), c, std::nullopt);
    REQUIRE(off.tokens.size() == 11);
    for (int k : {3, 5}) {
      CAPTURE(k);
      const SpecRun on = run_spec(m.model, spec_requests(tok), c, ngram(k));
      REQUIRE(on.tokens == off.tokens);
      REQUIRE(on.logprobs == off.logprobs);
      REQUIRE(on.finish == off.finish);
      REQUIRE(on.stats.spec_num_draft_tokens > 0);
      REQUIRE(on.stats.spec_num_accepted_tokens > 0);
      REQUIRE(on.stats.spec_num_accepted_tokens <= on.stats.spec_num_draft_tokens);
      REQUIRE(on.stats.spec_num_accepted_per_pos.size() == size_t(k));
      REQUIRE(on.stats.spec_num_accepted_per_pos[0] >= on.stats.spec_num_accepted_per_pos[size_t(k - 1)]);
      if (c.num_kv_blocks == 256) REQUIRE(on.stats.num_steps < off.stats.num_steps);  // accepted drafts save steps
      // Padding: every decode step gives every request 1 + k query tokens.
      REQUIRE(on.stats.num_decode_steps > 0);
      REQUIRE(on.stats.num_uniform_decode_steps == on.stats.num_decode_steps);
      if (c.num_kv_blocks == 10) REQUIRE(on.stats.num_preemptions > 0);
    }
    // Without padding a request verifies only the drafts its proposer found: some decode steps are ragged.
    const SpecRun ragged = run_spec(m.model, spec_requests(tok), c, ngram(3, false));
    REQUIRE(ragged.tokens == off.tokens);
    REQUIRE(ragged.logprobs == off.logprobs);
    REQUIRE(ragged.stats.num_uniform_decode_steps < ragged.stats.num_decode_steps);
  }
}

TEST_CASE("speculative decoding: each request alone equals the batch", "[spec][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  SchedulerConfig c;
  c.max_model_len = m.model.config().max_seq_len;
  c.num_kv_blocks = 256;
  c.eos_token_ids = m.engine_options().stop_token_ids;
  const auto reqs = spec_requests(tok);
  const SpecRun together = run_spec(m.model, reqs, c, ngram(4));
  for (const Request& r : reqs) {
    const SpecRun alone = run_spec(m.model, {r}, c, ngram(4));
    for (const auto& [id, tokens] : alone.tokens) REQUIRE(together.tokens.at(id) == tokens);
  }
}

TEST_CASE("speculative decoding: refused where it cannot run yet", "[spec]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  SchedulerConfig c;
  c.max_model_len = m.model.config().max_seq_len;
  c.num_kv_blocks = 16;
  REQUIRE_THROWS_WITH(EngineCore(m.model, c, true, ngram(3)), Catch::Contains("async scheduling"));
  const auto draft = SpeculativeConfig::parse(R"({"method": "draft_model", "num_speculative_tokens": 3, "model": "d.gguf"})");
  REQUIRE_THROWS_WITH(EngineCore(m.model, c, false, draft), Catch::Contains("draft_model is not implemented yet"));
  const auto rejection = SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 3, "verify": "rejection"})");
  REQUIRE_THROWS_WITH(EngineCore(m.model, c, false, rejection), Catch::Contains("rejection"));
}

}  // namespace parley
