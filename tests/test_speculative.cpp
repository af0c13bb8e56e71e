// Speculative decoding through EngineCore on stories260K (MISSION C5, C10): n-gram drafts verified exactly
// give the token ids and logprobs speculation off gives, greedy and seeded, alone and batched, with n > 1,
// penalties, min_tokens and preemption, with async scheduling or not; with padding every decode step is
// uniform, without it not. Rejection verification is reproducible and exact for greedy rows.
#include <catch2/catch.hpp>

#include "engine_core_runs.hpp"

namespace parley {
namespace {

// Prompts that repeat themselves, so the n-gram proposer finds matches, besides stories260K's own loops.
std::vector<Request> spec_requests(const Tokenizer& tok) {
  return test::mixed_requests(tok, {"Once upon a time, there was a little girl named Lily. Once upon a time, there was a little",
                                    "The cat sat on the mat. The dog sat on the mat. The bird sat on the",
                                    "Tom had a red ball. Tom had a red ball. Tom had a", "One day, a big dog went to the park."});
}

SpeculativeConfig ngram(int k, bool pad = true) {
  return SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": )" + std::to_string(k) +
                                  R"(, "prompt_lookup_min": 2, "prompt_lookup_max": 4, "pad_uniform": )" + (pad ? "true" : "false") + "}");
}

}  // namespace

TEST_CASE("speculative decoding: exact n-gram verification changes no token", "[spec][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const auto reqs = spec_requests(tok);
  for (const SchedulerConfig& c : {test::model_scheduler_config(m, 256), test::model_scheduler_config(m, 10)}) {
    CAPTURE(c.num_kv_blocks);
    const test::CoreRun off = test::run_core(m.model, reqs, c, false);
    REQUIRE(off.tokens.size() == 11);
    for (const auto [k, async_scheduling] : {std::pair{3, false}, std::pair{5, false}, std::pair{3, true}, std::pair{5, true}}) {
      CAPTURE(k, async_scheduling);
      const test::CoreRun on = test::run_core(m.model, reqs, c, async_scheduling, ngram(k));
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
    const test::CoreRun ragged = test::run_core(m.model, reqs, c, false, ngram(3, false));
    REQUIRE(ragged.tokens == off.tokens);
    REQUIRE(ragged.logprobs == off.logprobs);
    REQUIRE(ragged.stats.num_uniform_decode_steps < ragged.stats.num_decode_steps);
  }
}

TEST_CASE("speculative decoding: each request alone equals the batch", "[spec][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const SchedulerConfig c = test::model_scheduler_config(m, 256);
  const auto reqs = spec_requests(tok);
  const test::CoreRun together = test::run_core(m.model, reqs, c, false, ngram(4));
  for (const Request& r : reqs) {
    const test::CoreRun alone = test::run_core(m.model, {r}, c, false, ngram(4));
    for (const auto& [id, tokens] : alone.tokens) REQUIRE(together.tokens.at(id) == tokens);
  }
}

TEST_CASE("speculative decoding: refused where it cannot run yet", "[spec]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const SchedulerConfig c = test::model_scheduler_config(m, 16);
  const auto draft = SpeculativeConfig::parse(R"({"method": "draft_model", "num_speculative_tokens": 3, "model": "d.gguf"})");
  REQUIRE_THROWS_WITH(EngineCore(m.model, c, false, draft), Catch::Contains("draft_model is not implemented yet"));
}

TEST_CASE("speculative decoding: rejection verification on stories260K", "[spec][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const SchedulerConfig c = test::model_scheduler_config(m, 256);
  const auto reqs = spec_requests(tok);
  const auto rejection = SpeculativeConfig::parse(
      R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2, "verify": "rejection"})");
  const test::CoreRun off = test::run_core(m.model, reqs, c, false);
  const test::CoreRun a = test::run_core(m.model, reqs, c, false, rejection);
  const test::CoreRun b = test::run_core(m.model, reqs, c, true, rejection);
  // Reproducible: draws are keyed by (seed, position), so the same requests give the same tokens, async or not.
  REQUIRE(a.tokens == b.tokens);
  REQUIRE(a.logprobs == b.logprobs);
  REQUIRE(a.stats.spec_num_accepted_tokens > 0);
  int sampled_rows_differ = 0;
  for (const Request& r : reqs) {
    const bool greedy = r.sampling_params.temperature == 0.0f;
    for (const std::string& id : r.child_req_ids.empty() ? std::vector<std::string>{r.request_id} : r.child_req_ids) {
      CAPTURE(id);
      // A greedy row's target is one-hot: rejection sampling emits exactly what speculation off does.
      if (greedy) REQUIRE(a.tokens.at(id) == off.tokens.at(id));
      else sampled_rows_differ += a.tokens.at(id) != off.tokens.at(id);
      REQUIRE(a.finish.count(id));
      const auto lp = a.logprobs.find(id);
      REQUIRE((lp == a.logprobs.end() ? 0 : lp->second.size()) == (r.sampling_params.logprobs ? a.tokens.at(id).size() : 0));
    }
  }
  // Sampled rows follow the same distribution with other draws (the unit test checks the distribution).
  REQUIRE(sampled_rows_differ > 0);
}

}  // namespace parley
