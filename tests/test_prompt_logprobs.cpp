// Prompt logprobs on stories260K through EngineCore: a teacher-forced prompt scores its continuation exactly
// as generation scored it, bit for bit; a request's prompt logprobs are the same alone, batched, chunked,
// preempted, split, speculating, with async scheduling and after a request warmed the prefix cache (which it
// must not read); they arrive once, with the first token. Plus the scheduler half's rules on its own.
#include <catch2/catch.hpp>

#include <bit>

#include "engine/prompt_logprobs.hpp"
#include "engine_core_runs.hpp"

namespace parley {
namespace {

// Equal bit for bit: token, rank, and every logprob's bits (not merely ==).
bool same_bits(const TokenLogprobs& a, const TokenLogprobs& b) {
  if (a.token != b.token || a.rank != b.rank || a.top.size() != b.top.size()) return false;
  if (std::bit_cast<uint32_t>(a.logprob) != std::bit_cast<uint32_t>(b.logprob)) return false;
  for (size_t k = 0; k < a.top.size(); ++k)
    if (a.top[k].first != b.top[k].first ||
        std::bit_cast<uint32_t>(a.top[k].second) != std::bit_cast<uint32_t>(b.top[k].second))
      return false;
  return true;
}

Request scored(const std::string& id, std::vector<int> prompt, int num_top, int max_tokens = 4) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = max_tokens;
  p.prompt_logprobs = num_top;
  return Request(id, std::move(prompt), p, 1);
}

// Every entry scores the prompt token after its position, with num_top alternatives.
void require_well_formed(const std::vector<TokenLogprobs>& lps, const std::vector<int>& prompt, int num_top) {
  REQUIRE(lps.size() == prompt.size() - 1);
  for (size_t i = 0; i < lps.size(); ++i) {
    REQUIRE(lps[i].token == prompt[i + 1]);
    REQUIRE(int(lps[i].top.size()) == num_top);
    REQUIRE(lps[i].rank >= 1);
    REQUIRE(lps[i].logprob <= 0.0f);
    if (num_top > 0) REQUIRE((lps[i].rank == 1) == (lps[i].top[0].first == lps[i].token));
  }
}

}  // namespace

TEST_CASE("prompt logprobs of a teacher-forced continuation equal its generated logprobs bit for bit",
          "[prompt_logprobs][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const SchedulerConfig c = test::model_scheduler_config(m, 256);
  const std::vector<int> prompt = tok.encode("Once upon a time, there was a little girl", true);
  const int P = int(prompt.size()), K = 24;
  for (float temperature : {0.0f, 0.8f}) {  // logprobs are of the raw logits, whatever sampling drew
    CAPTURE(temperature);
    SamplingParams gen;
    gen.temperature = temperature;
    gen.max_tokens = K;
    gen.ignore_eos = true;
    gen.logprobs = 5;
    const test::CoreRun first = test::run_core(m.model, {Request("gen", prompt, gen, 42)}, c, false);
    const std::vector<int>& generated = first.tokens.at("gen");
    REQUIRE(int(generated.size()) == K);
    std::vector<int> forced = prompt;
    forced.insert(forced.end(), generated.begin(), generated.end());
    const test::CoreRun second = test::run_core(m.model, {scored("forced", forced, 5, 1)}, c, false);
    const std::vector<TokenLogprobs>& lps = second.prompt_logprobs.at("forced");
    require_well_formed(lps, forced, 5);
    // Entry P - 1 + i scores forced token P + i, generated token i, from the same position's logits.
    for (int i = 0; i < K; ++i) {
      CAPTURE(i);
      REQUIRE(same_bits(lps[size_t(P - 1 + i)], first.sampled_logprobs.at("gen")[size_t(i)]));
    }
  }
}

TEST_CASE("prompt logprobs are the same alone, batched, chunked, preempted, split and speculating",
          "[prompt_logprobs][spec][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const std::vector<int> prompt = tok.encode(
      "Lily and Ben went to the park. They saw a big dog and a little cat. The dog was happy and ran "
      "to the tree. Ben",
      true);
  REQUIRE(prompt.size() > 32);  // spans blocks and chunks
  const SchedulerConfig base = test::model_scheduler_config(m, 256);
  const test::CoreRun alone = test::run_core(m.model, {scored("pl", prompt, 3)}, base, false);
  const std::vector<TokenLogprobs>& expected = alone.prompt_logprobs.at("pl");
  require_well_formed(expected, prompt, 3);

  std::vector<Request> batch =
      test::mixed_requests(tok, {"Once upon a time", "The cat sat on the mat and", "One day, a big dog"});
  batch.push_back(scored("pl", prompt, 3, 30));
  Request parallel = scored("n.0", prompt, 3, 12);  // n = 3: prefilled once, every choice gets the prompt's
  parallel.sampling_params.temperature = 0.8f, parallel.sampling_params.n = 3;
  parallel.child_req_ids = {"n.0", "n.1", "n.2"}, parallel.child_seeds = {5, 6, 7};
  batch.erase(std::remove_if(batch.begin(), batch.end(), [](const Request& r) { return r.request_id == "n.0"; }),
              batch.end());
  batch.push_back(parallel);

  SchedulerConfig chunked = base;
  chunked.max_num_batched_tokens = 16, chunked.long_prefill_token_threshold = 7;
  const SchedulerConfig tight = test::model_scheduler_config(m, 10);  // 160 slots for all of them: preemption
  SchedulerConfig unsplit = base;
  unsplit.enable_delayed_split = false;  // n independent requests, each scoring the prompt itself
  const auto ngram =
      SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2})");
  const auto layer_skip =
      SpeculativeConfig::parse(R"({"method": "layer_skip", "num_speculative_tokens": 2, "draft_layers": 3})");
  struct Case {
    const char* name;
    SchedulerConfig config;
    std::optional<SpeculativeConfig> spec;
  };
  for (const Case& k : {Case{"batched", base, {}}, Case{"chunked", chunked, {}}, Case{"tight", tight, {}},
                        Case{"unsplit", unsplit, {}}, Case{"ngram", base, ngram}, Case{"ngram chunked", chunked, ngram},
                        Case{"layer_skip tight", tight, layer_skip}}) {
    for (bool async_scheduling : {false, true}) {
      CAPTURE(k.name, async_scheduling);
      const test::CoreRun run = test::run_core(m.model, batch, k.config, async_scheduling, k.spec);
      REQUIRE(run.prompt_logprobs.size() == 4);  // only the requests that asked
      for (const char* id : {"pl", "n.0", "n.1", "n.2"}) {
        CAPTURE(id);
        REQUIRE(run.prompt_logprobs.at(id) == expected);
      }
      if (k.config.num_kv_blocks == 10) REQUIRE(run.stats.num_preemptions > 0);
      // The other requests' tokens are what they are without a prompt-scoring neighbour.
      std::vector<Request> others(batch.begin(), batch.end() - 2);
      const test::CoreRun without = test::run_core(m.model, others, k.config, async_scheduling, k.spec);
      for (const auto& [id, tokens] : without.tokens) REQUIRE(run.tokens.at(id) == tokens);
    }
  }
}

TEST_CASE("prompt logprobs take no prefix-cache hits but their blocks join the cache", "[prompt_logprobs][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const std::vector<int> prompt =
      tok.encode("Tom had a red ball and a big blue kite that he loved very much. One day he went to the park", true);
  const int P = int(prompt.size());
  REQUIRE(P > 32);
  const SchedulerConfig c = test::model_scheduler_config(m, 256);
  const test::CoreRun alone = test::run_core(m.model, {scored("pl", prompt, 4)}, c, false);
  for (bool async_scheduling : {false, true}) {
    CAPTURE(async_scheduling);
    EngineCore core(m.model, c, async_scheduling);
    SamplingParams plain;
    plain.temperature = 0.0f;
    plain.max_tokens = 4;
    test::run_to_end(core, {Request("warm", prompt, plain, 1)}, async_scheduling);  // fills the cache with the prompt
    const SchedulerStats warm = core.scheduler().stats();
    REQUIRE(warm.num_cached_blocks >= P / c.block_size);
    const test::CoreRun run = test::run_to_end(core, {scored("pl", prompt, 4)}, async_scheduling);
    REQUIRE(run.prompt_logprobs.at("pl") == alone.prompt_logprobs.at("pl"));
    REQUIRE(run.stats.prefill_tokens_computed - warm.prefill_tokens_computed == P);  // every prompt token, none read
    REQUIRE(run.stats.prefix_cache_hits == warm.prefix_cache_hits);
    // A request without prompt logprobs hits what is cached (the warm-up's blocks and the scored request's).
    test::run_to_end(core, {Request("again", prompt, plain, 1)}, async_scheduling);
    REQUIRE(core.scheduler().stats().prefix_cache_hits - run.stats.prefix_cache_hits ==
            (P - 1) / c.block_size * c.block_size);
  }
}

TEST_CASE("an aborted request's prompt logprobs in flight never reach a new request of its id",
          "[prompt_logprobs][async][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const std::vector<int> old_prompt = tok.encode("The cat sat on the mat and looked at the bird in the tree.", true);
  const std::vector<int> new_prompt = tok.encode("One day, a big dog ran to the park to play with a red ball.", true);
  SchedulerConfig c = test::model_scheduler_config(m, 256);
  c.max_num_batched_tokens = 8;  // the old request's first chunk is still in flight when it is aborted
  const test::CoreRun expected = test::run_core(m.model, {scored("a", new_prompt, 2)}, c, true);
  EngineCore core(m.model, c, /*async_scheduling=*/true);
  SamplingParams busy;
  busy.temperature = 0.0f, busy.max_tokens = 40, busy.ignore_eos = true;
  core.add_request(Request("busy", tok.encode("Once", true), busy, 1));
  test::CoreRun run;
  for (const EngineCoreOutput& o : core.step()) test::record(run, o);  // busy's step in flight
  core.add_request(scored("a", old_prompt, 2));
  for (const EngineCoreOutput& o : core.step()) test::record(run, o);  // a's first chunk in flight
  REQUIRE(core.abort_requests({"a"}) == std::vector<std::string>{"a"});
  core.add_request(scored("a", new_prompt, 2));
  for (int steps = 0; core.has_unfinished_requests(); ++steps) {
    REQUIRE(steps < 500);
    for (const EngineCoreOutput& o : core.step()) test::record(run, o);
  }
  REQUIRE(run.prompt_logprobs.at("a") == expected.prompt_logprobs.at("a"));
  REQUIRE(run.tokens.at("a") == expected.tokens.at("a"));
}

TEST_CASE("prompt logprobs: chunks are kept once and in order, gaps and repeats add nothing", "[prompt_logprobs]") {
  auto entries = [](int first, int n) {
    PromptLogprobsChunk c{first, {}};
    for (int i = 0; i < n; ++i) c.entries.push_back({first + i, -float(first + i), 1, {}});
    return c;
  };
  std::vector<TokenLogprobs> got;
  collect_prompt_logprobs(got, entries(1, 4));  // tokens 1..4
  collect_prompt_logprobs(got, entries(9, 2));  // a gap: tokens 5..8 missing
  REQUIRE(got.size() == 4);
  collect_prompt_logprobs(got, entries(1, 3));  // recomputed after a preemption: nothing new
  REQUIRE(got.size() == 4);
  collect_prompt_logprobs(got, entries(3, 6));  // tokens 3..8: 5..8 are new
  REQUIRE(got.size() == 8);
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i].token == int(i) + 1);
}

TEST_CASE("prompt logprobs: the worker scores positions whose next token is in the prompt", "[prompt_logprobs]") {
  PromptLogprobsRows rows;
  rows.add(0, 0, 5, 10, 3);                   // positions 0..4 of 10: tokens 1..5
  rows.add(1, 6, 10, 10, 8);                  // positions 6..9: 9 is the last, whose logits sample (not a prompt token)
  rows.add(2, 9, 10, 10, 12);                 // only the last position: nothing to score
  std::vector<int> logits_indices = {7, 11};  // the sampled rows come first
  rows.append_logits_indices(logits_indices);
  REQUIRE(logits_indices == std::vector<int>{7, 11, 3, 4, 5, 6, 7, 8, 9, 10});
}

TEST_CASE("prompt logprobs are refused where the engine cannot score them, out of range everywhere",
          "[prompt_logprobs]") {
  SchedulerConfig c;
  c.max_model_len = 64, c.num_kv_blocks = 16;
  c.prompt_logprobs_refusal = "not on this device";
  Scheduler s(c);
  REQUIRE_THROWS_WITH(s.add_request(scored("a", {1, 2, 3}, 0)), "not on this device");
  REQUIRE_NOTHROW(s.add_request(Request("b", {1, 2, 3}, SamplingParams{}, 1)));
  SamplingParams p;
  p.prompt_logprobs = 21;
  REQUIRE_THROWS_WITH(p.validate(), "Requested prompt logprobs of 21, which is greater than max allowed: 20");
  p.prompt_logprobs = -1;
  REQUIRE_THROWS_WITH(p.validate(), "prompt_logprobs must be non-negative, got -1.");
  p.prompt_logprobs = 20;
  REQUIRE_NOTHROW(p.validate());
}

}  // namespace parley
