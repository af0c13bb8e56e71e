// Structured outputs through the sampler: the trie walk's masks against a token-by-token check, and
// stories260K sampled at temperature 1 under grammars it would never follow by itself: every output
// matches, and the outputs are the same alone or batched, chunked, preempted, async or speculative.
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "engine/structured_output/structured_output_manager.hpp"
#include "engine/kv_transfer.hpp"
#include "engine_core_runs.hpp"
#include "pd_pair.hpp"

using namespace parley;
using namespace parley::test;
using structured::CompiledGrammar;
using structured::Grammar;
using structured::GrammarVocabulary;
using structured::StructuredOutputManager;

namespace {

Loaded& stories() {
  static Loaded m(shared_model("stories260K.bin"), shared_model("tok512.bin"));
  return m;
}

// Names, ages and a mood: words stories260K knows, in a shape it never writes.
const char* kPersonGrammar = R"(root ::= "{\"name\": \"" name "\", \"age\": " age ", \"mood\": " mood "}"
name ::= [A-Z] [a-z]{1,8}
age ::= [1-9] [0-9]?
mood ::= "\"happy\"" | "\"sad\"" | "null")";
const char* kListGrammar = R"(root ::= "[" item ("," " "? item){0,4} "]"
item ::= [0-9]{1,3} | "\"" [a-z ]{0,6} "\"")";

StructuredOutputsParams grammar_params(const char* gbnf) { return {StructuredOutputsParams::Kind::Grammar, gbnf}; }

std::vector<Request> structured_requests(const Tokenizer& tok) {
  const std::vector<std::string> prompts = {"Once upon a time", "Lily and Tom went to the park.", "The sun"};
  std::vector<Request> reqs;
  for (int i = 0; i < 9; ++i) {
    SamplingParams p;
    p.temperature = i == 4 ? 0.0f : 1.0f;
    p.max_tokens = 120;
    p.structured_outputs = grammar_params(i % 3 == 0 ? kListGrammar : kPersonGrammar);
    if (i == 2)
      p.structured_outputs =
          StructuredOutputsParams{StructuredOutputsParams::Kind::Choice, R"(["yes", "no", "It was a dog"])"};
    if (i == 5) p.min_tokens = 100;  // the grammar ends first: its end outranks min_tokens
    if (i == 7) p.logit_bias = {{tok.encode("}", false).back(), 50.0f}};  // cannot force a forbidden token
    reqs.emplace_back("s" + std::to_string(i), tok.encode(prompts[size_t(i) % prompts.size()], true), p,
                      500 + uint64_t(i));
  }
  Request parent = reqs[1];  // n = 3: each child constrained from the shared prefill
  parent.seed = 40;
  parent.request_id = "n.0";
  parent.sampling_params.n = 3;
  for (int i = 0; i < 3; ++i)
    parent.child_req_ids.push_back("n." + std::to_string(i)), parent.child_seeds.push_back(40 + uint64_t(i));
  reqs.push_back(parent);
  return reqs;
}

std::shared_ptr<StructuredOutputManager> manager() {
  static auto vocab = std::make_shared<const GrammarVocabulary>(Tokenizer(*stories().file.vocab));
  return std::make_shared<StructuredOutputManager>(vocab);
}

CoreRun run_structured(const std::vector<Request>& reqs, SchedulerConfig c, bool async_scheduling,
                       const std::optional<SpeculativeConfig>& spec = std::nullopt, bool mask_prefetch = true) {
  EngineCore core(stories().model, c, async_scheduling, spec, &*stories().file.vocab);
  core.runner().set_structured_output(manager());
  core.runner().set_mask_prefetch(mask_prefetch);
  return run_to_end(core, reqs, async_scheduling);
}

SchedulerConfig config(int num_kv_blocks = 256, bool caching = false) {
  SchedulerConfig c = model_scheduler_config(stories(), num_kv_blocks);
  c.enable_prefix_caching = caching;
  return c;
}

// The text an output spells, without the end token that closed it.
std::string text_of(const std::vector<int>& tokens) {
  const Tokenizer tok(*stories().file.vocab);
  std::vector<int> body = tokens;
  while (!body.empty() && tok.is_end_of_generation(body.back())) body.pop_back();
  return tok.decode(body, 0);
}

}  // namespace

TEST_CASE("The trie walk allows exactly the tokens whose bytes the grammar accepts", "[structured]") {
  std::mt19937 rng(3);
  const std::string alphabet = "{}[]\":, abcxyz019\\\n\xC3\xA9";
  std::vector<std::optional<std::string>> bytes;
  for (int t = 0; t < 3000; ++t) {
    std::string s;
    for (size_t n = 1 + rng() % 5; n > 0; --n) s += alphabet[rng() % alphabet.size()];
    bytes.push_back(t % 97 == 0 ? std::nullopt : std::optional(s));  // some tokens have no bytes (control)
  }
  auto vocab = std::make_shared<const GrammarVocabulary>(bytes);
  auto grammar = std::make_shared<const Grammar>(Grammar::parse(R"(root ::= "{" (pair ("," pair)*)? "}"
pair ::= " "? "\"" [a-z\u00e9]* "\":" " "? value
value ::= [0-9]+ | "\"" [a-z]* "\"" | "[" (value ("," value)*)? "]" | root)"));
  CompiledGrammar compiled(grammar, vocab);
  const std::string text = "{\"ab\": [1,\"x\",[]], \"\xC3\xA9z\":{\"c\":0}}";
  int state = compiled.initial_state();
  int checked_allowed = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    const auto mask = compiled.allowed_tokens(state);
    for (int t = 0; t < vocab->size(); ++t) {
      const bool expected = compiled.accept_token(state, t) != CompiledGrammar::kDead;
      REQUIRE(structured::token_allowed(*mask, t) == expected);
      checked_allowed += expected;
    }
    if (i < text.size()) state = compiled.accept_bytes(state, text.substr(i, 1));
    REQUIRE(state != CompiledGrammar::kDead);
  }
  CHECK(compiled.accepting(state));
  CHECK(checked_allowed > 100);
}

TEST_CASE("Sampled at temperature 1 every constrained output matches its grammar", "[structured][model]") {
  const Tokenizer tok(*stories().file.vocab);
  const auto reqs = structured_requests(tok);
  const CoreRun run = run_structured(reqs, config(), false);
  REQUIRE(run.tokens.size() == 12);
  std::map<std::string, const char*> grammar_of;
  for (const Request& r : reqs)
    grammar_of[r.request_id] = r.sampling_params.structured_outputs->kind == StructuredOutputsParams::Kind::Choice
                                   ? R"(root ::= "yes" | "no" | "It was a dog")"
                                   : r.sampling_params.structured_outputs->spec.c_str();
  for (const char* child : {"n.1", "n.2"}) grammar_of[child] = grammar_of["n.0"];
  int distinct = 0;
  std::set<std::string> texts;
  for (const auto& [id, tokens] : run.tokens) {
    INFO(id << ": " << text_of(tokens));
    CHECK(run.finish.at(id) == FinishReason::Stop);
    CHECK(Grammar::parse(grammar_of.at(id)).matches(text_of(tokens)));
    distinct += texts.insert(text_of(tokens)).second;
  }
  CHECK(distinct >= 8);  // seeds still choose: the mask narrows the draw, it does not fix it
}

TEST_CASE("Constrained outputs are the same alone batched chunked preempted async and speculative",
          "[structured][model]") {
  const Tokenizer tok(*stories().file.vocab);
  const auto reqs = structured_requests(tok);
  const CoreRun off = run_structured(reqs, config(), false);
  for (const Request& r : reqs) {
    const CoreRun alone = run_structured({r}, config(), false);
    for (const auto& [id, tokens] : alone.tokens) REQUIRE(tokens == off.tokens.at(id));
  }
  SchedulerConfig chunked = config();
  chunked.max_num_batched_tokens = 24;
  chunked.long_prefill_token_threshold = 7;
  require_same_outputs(run_structured(reqs, chunked, false), off);
  const CoreRun preempted = run_structured(reqs, config(12, true), false);
  require_same_outputs(preempted, off);
  CHECK(preempted.stats.num_preemptions > 0);
  require_same_outputs(run_structured(reqs, config(256, true), true), off);
  const auto ngram =
      SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 1})");
  const CoreRun spec = run_structured(reqs, config(256, true), false, ngram);
  require_same_outputs(spec, off);
  CHECK(spec.stats.spec_num_accepted_tokens > 0);
}

TEST_CASE("Masks walked while the forward pass runs are the masks sampling would walk", "[structured][model]") {
  const Tokenizer tok(*stories().file.vocab);
  const auto reqs = structured_requests(tok);
  auto& stats = structured::structured_output_stats();
  const auto walks = [&] { return std::pair{stats.masks_computed.load(), stats.masks_prefetched.load()}; };
  auto before = walks();
  const CoreRun off = run_structured(reqs, config(), false, std::nullopt, false);
  auto after = walks();
  CHECK(after.second == before.second);  // off: nothing walked ahead
  REQUIRE(after.first - before.first > 20);
  before = after;
  const CoreRun on = run_structured(reqs, config(), false);
  after = walks();
  require_same_outputs(on, off);
  // Every walk was done ahead: only a row's first position is sampled without speculation.
  CHECK(after.first - before.first > 20);
  CHECK(after.second - before.second == after.first - before.first);
  const auto ngram =
      SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 1})");
  before = walks();
  require_same_outputs(run_structured(reqs, config(256, true), true, ngram), off);
  after = walks();
  CHECK(after.second - before.second > 0);  // verified positions after the first are walked when sampled
}

TEST_CASE(
    "A structured request needs a manager and a bad grammar leaves the batch as it was, both the request's "
    "own failure",
    "[structured]") {
  InputBatch batch(4, 64, 8, {2});
  CachedRequestState r;
  r.req_id = "a";
  r.prompt_token_ids = {1, 5};
  r.block_ids = {{0}};
  r.sampling_params.structured_outputs = grammar_params(R"(root ::= "x")");
  CHECK_THROWS_WITH(batch.add_request(r), Catch::Contains("no structured-output support for request a"));
  batch.set_structured_output_manager(manager());
  r.sampling_params.structured_outputs = grammar_params("root ::= (");
  try {
    batch.add_request(r);
    FAIL("a grammar that does not compile was taken");
  } catch (const RequestFailure& e) {  // it fails that request only (Scheduler::resync)
    CHECK(e.req_id == "a");
    CHECK_THAT(e.what(), Catch::Contains("grammar: expected ')'"));
  }
  CHECK(batch.num_reqs() == 0);
  r.sampling_params.structured_outputs = grammar_params(R"(root ::= "x")");
  CHECK(batch.add_request(r) == 0);
}

TEST_CASE("Prefill on one instance and decode on another under a grammar equals colocated", "[structured][model]") {
  const Tokenizer tok(*stories().file.vocab);
  const auto reqs = structured_requests(tok);
  PdPair pd(stories().model, config(256, true));
  pd.prefill.runner().set_structured_output(manager());
  pd.decode.runner().set_structured_output(manager());
  require_same_outputs(pd.run(reqs), run_structured(reqs, config(256, true), false));
  CHECK(pd.transfers == int64_t(reqs.size()));
}

TEST_CASE("A grammar that starts after a marker leaves the tokens up to it free, then constrains", "[structured]") {
  // Tokens: 0 "a", 1 "{", 2 "}", 3 "END" (the marker), 4 the end of generation.
  const auto vocab = std::make_shared<const GrammarVocabulary>(
      std::vector<std::optional<std::string>>{"a", "{", "}", "END", std::nullopt});
  StructuredOutputManager m(vocab);
  auto g = m.grammar_for({StructuredOutputsParams::Kind::Regex, R"(\{\})", {0, 3}}, {4});
  auto allowed = [&](std::vector<int> output) {
    g->sync(output);
    std::vector<float> logits(5, 1.0f);
    g->apply_mask(logits.data(), 5);
    std::vector<int> out;
    for (int t = 0; t < 5; ++t)
      if (logits[t] == 1.0f) out.push_back(t);
    return out;
  };
  using V = std::vector<int>;
  CHECK(allowed({}) == V{0, 1, 2, 3, 4});  // free: nothing masked, nothing terminated
  CHECK_FALSE(g->is_terminated());
  CHECK(allowed({2, 2, 3, 0}) == V{0, 1, 2, 3, 4});  // "} } END a": the marker is "a END", not yet
  CHECK(allowed({2, 0, 3}) == V{1});                 // after "a END": the regex's first byte
  CHECK(allowed({2, 0, 3, 1}) == V{2});
  CHECK(allowed({2, 0, 3, 1, 2}) == V{4});
  CHECK(g->is_terminated());
  CHECK(allowed({2, 0}) == V{0, 1, 2, 3, 4});  // rolled back past the marker: free again
  CHECK(allowed({2, 0, 3, 0, 3, 1}) == V{4});  // the first marker counts: "a" after it is refused: only the end
  // The same grammar from the first token: one compiled grammar serves both (starts_after is the matcher's).
  auto at_once = m.grammar_for({StructuredOutputsParams::Kind::Regex, R"(\{\})"}, {4});
  at_once->sync(std::vector<int>{});
  std::vector<float> logits(5, 1.0f);
  at_once->apply_mask(logits.data(), 5);
  CHECK(logits == std::vector<float>{-INFINITY, 1.0f, -INFINITY, -INFINITY, -INFINITY});
}

TEST_CASE("The worker binds the grammar the server compiled: it does not compile the spec again", "[structured]") {
  // Tokens: 0 "a", 1 "{", 2 "}", 3 the end of generation.
  const auto vocab =
      std::make_shared<const GrammarVocabulary>(std::vector<std::optional<std::string>>{"a", "{", "}", std::nullopt});
  StructuredOutputManager m(vocab);
  auto first_allowed = [&](const StructuredOutputsParams& params) {
    auto g = m.grammar_for(params, {3});
    g->sync(std::vector<int>{});
    std::vector<float> logits(4, 1.0f);
    g->apply_mask(logits.data(), 4);
    return logits;
  };
  // The spec says "a"; the grammar it carries (as if the server had compiled it) says "{": the carried one rules.
  StructuredOutputsParams carried{StructuredOutputsParams::Kind::Regex, "a"};
  carried.grammar = structured::compile_grammar({StructuredOutputsParams::Kind::Regex, R"(\{)"});
  CHECK(first_allowed(carried) == std::vector<float>{-INFINITY, 1.0f, -INFINITY, -INFINITY});
  // Without one (a decode instance's copy), the worker compiles the spec; the cache is keyed by the spec.
  StructuredOutputManager fresh(vocab);
  auto g = fresh.grammar_for({StructuredOutputsParams::Kind::Regex, "a"}, {3});
  g->sync(std::vector<int>{});
  std::vector<float> logits(4, 1.0f);
  g->apply_mask(logits.data(), 4);
  CHECK(logits == std::vector<float>{1.0f, -INFINITY, -INFINITY, -INFINITY});
}

TEST_CASE("A grammar after a marker: the same ids as unconstrained up to the marker, the grammar's after it",
          "[structured][model]") {
  const Tokenizer tok(*stories().file.vocab);
  SamplingParams p;
  p.temperature = 1.0f;
  p.max_tokens = 60;
  const Request free_run("free", tok.encode("Once upon a time", true), p, 77);
  const std::vector<int> free_ids = run_structured({free_run}, config(), false).tokens.at("free");
  REQUIRE(free_ids.size() > 8);
  // The marker: the output's tokens 2 and 3, where they first occur together.
  const std::vector<int> marker = {free_ids[2], free_ids[3]};
  REQUIRE(std::search(free_ids.begin(), free_ids.end(), marker.begin(), marker.end()) == free_ids.begin() + 2);
  Request after = free_run;
  after.request_id = "after";
  after.sampling_params.structured_outputs = {StructuredOutputsParams::Kind::Grammar, kListGrammar, marker};
  Request never = after;  // a marker the free output never writes: the run is the free one, token for token
  never.request_id = "never";
  never.sampling_params.structured_outputs->starts_after = {free_ids[0], free_ids[0], free_ids[0], free_ids[0]};
  REQUIRE(std::search(free_ids.begin(), free_ids.end(), never.sampling_params.structured_outputs->starts_after.begin(),
                      never.sampling_params.structured_outputs->starts_after.end()) == free_ids.end());
  const CoreRun run = run_structured({after, never}, config(), false);
  CHECK(run.tokens.at("never") == free_ids);
  const std::vector<int>& ids = run.tokens.at("after");
  REQUIRE(ids.size() > 4);
  CHECK(std::vector<int>(ids.begin(), ids.begin() + 4) == std::vector<int>(free_ids.begin(), free_ids.begin() + 4));
  const std::string constrained = text_of(std::vector<int>(ids.begin() + 4, ids.end()));
  INFO(constrained);
  CHECK(Grammar::parse(kListGrammar).matches(constrained));
}

TEST_CASE("The prefill request carries its structured output across processes", "[structured]") {
  for (const auto& so : {StructuredOutputsParams{StructuredOutputsParams::Kind::Json, R"({"type": "integer"})"},
                         StructuredOutputsParams{StructuredOutputsParams::Kind::Regex, "ab", {7, 8}},
                         StructuredOutputsParams{StructuredOutputsParams::Kind::Choice, R"(["a", "b"])"},
                         StructuredOutputsParams{StructuredOutputsParams::Kind::JsonObject, ""}}) {
    SamplingParams p;
    p.structured_outputs = so;
    const Request r("x", {1, 2, 3}, p, 5);
    KvLayout layout;
    const Request back = decode_prefill_request(encode_prefill_request(r, KvLayout{}), &layout);
    REQUIRE(back.sampling_params.structured_outputs == so);
  }
  SamplingParams plain;
  const Request r("y", {1}, plain, 5);
  KvLayout layout;
  CHECK_FALSE(
      decode_prefill_request(encode_prefill_request(r, KvLayout{}), &layout).sampling_params.structured_outputs);
}
