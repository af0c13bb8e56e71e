// OutputProcessor on llama2.c's tok512.bin: deltas, stop strings held back across steps, finish and
// stop reasons, aborts. Token texts used (after a BOS prompt the first token's leading space drops):
// 403 " Once", 407 " upon", 261 " a", 378 " time", 426 ".", 317 " Lily", 286 " was", 393 " happy",
// 465 "\u201c" (3 bytes), 3 + b the byte b, 2 EOS.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "engine/output_processor.hpp"
#include "test_support.hpp"

using namespace parley;

namespace {

Tokenizer tok512() { return Tokenizer(read_llama2c_tokenizer(test::shared_model("tok512.bin"), 512)); }

EngineCoreOutput step(const std::string& id, std::vector<int> tokens, FinishReason finish = FinishReason::None,
                      std::optional<int> stop_token = std::nullopt) {
  EngineCoreOutput o;
  o.req_id = id;
  o.new_token_ids = std::move(tokens);
  o.finish_reason = finish;
  o.stop_token = stop_token;
  return o;
}

// Feeds one request's steps one by one; returns each step's output (exactly one per step).
std::vector<RequestOutput> run(OutputProcessor& p, const std::vector<EngineCoreOutput>& steps,
                               std::vector<std::string>* aborted = nullptr) {
  std::vector<RequestOutput> outs;
  for (const auto& s : steps) {
    auto r = p.process_outputs({s});
    REQUIRE(r.outputs.size() == 1);
    outs.push_back(r.outputs[0]);
    if (aborted) aborted->insert(aborted->end(), r.reqs_to_abort.begin(), r.reqs_to_abort.end());
  }
  return outs;
}

std::vector<std::string> texts(const std::vector<RequestOutput>& outs) {
  std::vector<std::string> t;
  for (const auto& o : outs) t.push_back(o.text);
  return t;
}

SamplingParams with_stop(std::vector<std::string> stop, bool include = false) {
  SamplingParams p;
  p.stop = std::move(stop);
  p.include_stop_str_in_output = include;
  return p;
}

bool no_stop_reason(const StopReason& r) { return std::holds_alternative<std::monostate>(r); }

}  // namespace

TEST_CASE("deltas are byte-exact with cumulative counts, logprobs and cached tokens", "[output_processor]") {
  const Tokenizer tok = tok512();
  OutputProcessor p(tok);
  p.add_request("r", {1, 403}, {});
  auto first = step("r", {407, 261});
  first.new_logprobs = {{407, -0.5f, 1, {}}, {261, -1.25f, 2, {{265, -1.0f}}}};
  first.num_cached_tokens = 1;
  const auto outs = run(p, {first, step("r", {378}), step("r", {426}, FinishReason::Length)});
  CHECK(texts(outs) == std::vector<std::string>{" upon a", " time", "."});
  CHECK(outs[0].token_ids == std::vector<int>{407, 261});
  REQUIRE(outs[0].logprobs.size() == 2);
  CHECK(outs[0].logprobs[1].token == 261);
  CHECK(outs[0].logprobs[1].logprob == -1.25f);
  CHECK(outs[0].logprobs[1].top == std::vector<std::pair<int, float>>{{265, -1.0f}});
  CHECK(outs[0].num_output_tokens == 2);
  CHECK(outs[1].num_output_tokens == 3);
  CHECK(outs[2].num_output_tokens == 4);
  for (const auto& o : outs) {
    CHECK(o.num_prompt_tokens == 2);
    CHECK(o.num_cached_tokens == 1);
  }
  CHECK_FALSE(outs[1].finished());
  CHECK(outs[2].finish_reason == FinishReason::Length);
  CHECK(no_stop_reason(outs[2].stop_reason));
  CHECK_FALSE(p.has_request("r"));
  CHECK(p.num_unfinished() == 0);
}

TEST_CASE("a BOS prompt drops the first token's leading space", "[output_processor]") {
  const Tokenizer tok = tok512();
  OutputProcessor p(tok);
  p.add_request("r", {1}, {});
  const auto outs = run(p, {step("r", {403, 407}, FinishReason::Length)});
  CHECK(outs[0].text == "Once upon");
}

TEST_CASE("a stop string split across steps is never partly emitted", "[output_processor]") {
  const Tokenizer tok = tok512();
  OutputProcessor p(tok);
  std::vector<std::string> aborted;
  SECTION("two steps") {
    p.add_request("r", {1}, with_stop({" a time"}));  // holds back 6 bytes
    const auto outs = run(p, {step("r", {403}), step("r", {407}), step("r", {261}), step("r", {378})}, &aborted);
    CHECK(texts(outs) == std::vector<std::string>{"", "Onc", "e ", "upon"});
    CHECK(outs[3].finish_reason == FinishReason::Stop);
    CHECK(std::get<std::string>(outs[3].stop_reason) == " a time");
    CHECK(outs[3].token_ids == std::vector<int>{378});
    CHECK(outs[3].num_output_tokens == 4);
  }
  SECTION("three steps") {
    p.add_request("r", {1}, with_stop({"on a t"}));  // " up|on", " a", " t|ime"
    const auto outs = run(p, {step("r", {403}), step("r", {407}), step("r", {261}), step("r", {378})}, &aborted);
    CHECK(texts(outs) == std::vector<std::string>{"", "Once", " u", "p"});
    CHECK(std::get<std::string>(outs[3].stop_reason) == "on a t");
  }
  CHECK(aborted == std::vector<std::string>{"r"});  // the engine did not finish it: the scheduler must drop it
  CHECK_FALSE(p.has_request("r"));
  CHECK(p.process_outputs({step("r", {426})}).outputs.empty());  // the engine's step already in flight
}

TEST_CASE("include_stop_str_in_output keeps the stop string and holds nothing back", "[output_processor]") {
  const Tokenizer tok = tok512();
  OutputProcessor p(tok);
  p.add_request("r", {1}, with_stop({"a time"}, true));
  std::vector<std::string> aborted;
  const auto outs = run(p, {step("r", {403}), step("r", {407}), step("r", {261}), step("r", {378, 426})}, &aborted);
  CHECK(texts(outs) == std::vector<std::string>{"Once", " upon", " a", " time"});  // "." after it is dropped
  CHECK(outs[3].finish_reason == FinishReason::Stop);
  CHECK(std::get<std::string>(outs[3].stop_reason) == "a time");
  CHECK(aborted == std::vector<std::string>{"r"});
}

TEST_CASE("a stop string inside a token's text drops the rest", "[output_processor]") {
  const Tokenizer tok = tok512();
  OutputProcessor p(tok);
  p.add_request("r", {1}, with_stop({"pp"}));  // " ha|pp|y"
  const auto outs = run(p, {step("r", {317}), step("r", {286}), step("r", {393, 426})});
  CHECK(texts(outs) == std::vector<std::string>{"Lil", "y wa", "s ha"});
  CHECK(std::get<std::string>(outs[2].stop_reason) == "pp");
  CHECK(outs[2].token_ids == std::vector<int>{393, 426});
}

TEST_CASE("of several stop strings the earliest in the text wins", "[output_processor]") {
  const Tokenizer tok = tok512();
  OutputProcessor p(tok);
  p.add_request("a", {1}, with_stop({"time", "upon"}));
  p.add_request("b", {1}, with_stop({"upon", "up"}, true));  // same start: the first listed wins
  const auto r = p.process_outputs({step("a", {403, 407, 261, 378}), step("b", {403, 407, 261})});
  REQUIRE(r.outputs.size() == 2);
  CHECK(r.outputs[0].text == "Once ");
  CHECK(std::get<std::string>(r.outputs[0].stop_reason) == "upon");
  CHECK(r.outputs[1].text == "Once upon");
  CHECK(std::get<std::string>(r.outputs[1].stop_reason) == "upon");
  CHECK(r.reqs_to_abort == std::vector<std::string>{"a", "b"});
}

TEST_CASE("stop strings are not matched in the first min_tokens tokens", "[output_processor]") {
  const Tokenizer tok = tok512();
  OutputProcessor p(tok);
  SamplingParams params = with_stop({"Once"});
  params.min_tokens = 1;
  p.add_request("r", {1}, params);
  const auto outs = run(p, {step("r", {403, 407}), step("r", {403})});
  CHECK(texts(outs) == std::vector<std::string>{"Once u", "pon "});  // the first "Once" was token 1
  CHECK(outs[1].finish_reason == FinishReason::Stop);
  CHECK(std::get<std::string>(outs[1].stop_reason) == "Once");
}

TEST_CASE("a stop_token_ids hit reports the token id and leaves its text out", "[output_processor]") {
  const Tokenizer tok = tok512();
  OutputProcessor p(tok);
  SamplingParams params;
  params.stop_token_ids = {426};
  params.include_stop_str_in_output = GENERATE(false, true);
  p.add_request("r", {1}, params);
  std::vector<std::string> aborted;
  const auto outs = run(p, {step("r", {403}), step("r", {407, 426}, FinishReason::Stop, 426)}, &aborted);
  CHECK(outs[1].text == (params.include_stop_str_in_output ? " upon." : " upon"));
  CHECK(outs[1].token_ids == std::vector<int>{407, 426});
  CHECK(outs[1].finish_reason == FinishReason::Stop);
  CHECK(std::get<int>(outs[1].stop_reason) == 426);
  CHECK(aborted.empty());  // the engine finished it itself
  CHECK_FALSE(p.has_request("r"));
}

TEST_CASE("an EOS stop reports no stop_reason", "[output_processor]") {
  const Tokenizer tok = tok512();
  REQUIRE(tok.eos_id() == 2);
  OutputProcessor p(tok);
  p.add_request("r", {1}, {});
  const auto outs = run(p, {step("r", {403, 2}, FinishReason::Stop, 2)});
  CHECK(outs[0].text == "Once");
  CHECK(outs[0].finish_reason == FinishReason::Stop);
  CHECK(no_stop_reason(outs[0].stop_reason));
}

TEST_CASE("a length finish releases the held-back text", "[output_processor]") {
  const Tokenizer tok = tok512();
  OutputProcessor p(tok);
  p.add_request("r", {1}, with_stop({"xyz!"}));  // holds back 3 bytes
  const auto outs = run(p, {step("r", {403}), step("r", {407}, FinishReason::Length)});
  CHECK(texts(outs) == std::vector<std::string>{"O", "nce upon"});
  CHECK(outs[1].finish_reason == FinishReason::Length);
  CHECK(no_stop_reason(outs[1].stop_reason));
}

TEST_CASE("abort returns a final output once and forgets the request", "[output_processor]") {
  const Tokenizer tok = tok512();
  OutputProcessor p(tok);
  p.add_request("r", {1, 403}, with_stop({"zz"}));
  run(p, {step("r", {407, 261})});
  const auto a = p.abort_request("r");
  REQUIRE(a);
  CHECK(a->req_id == "r");
  CHECK(a->finish_reason == FinishReason::Abort);
  CHECK(a->text.empty());
  CHECK(a->token_ids.empty());
  CHECK(a->num_prompt_tokens == 2);
  CHECK(a->num_output_tokens == 2);
  CHECK_FALSE(p.has_request("r"));
  CHECK_FALSE(p.abort_request("r"));
  CHECK(p.process_outputs({step("r", {378}, FinishReason::Abort)}).outputs.empty());
}

TEST_CASE("unknown ids are skipped and duplicate ids throw", "[output_processor]") {
  const Tokenizer tok = tok512();
  OutputProcessor p(tok);
  p.add_request("a", {1}, {});
  CHECK_THROWS_AS(p.add_request("a", {1}, {}), std::invalid_argument);
  CHECK_THROWS_WITH(p.add_request("a", {1}, {}), "Request id a already running.");
  const auto r = p.process_outputs({step("ghost", {403}), step("a", {403}), step("ghost", {407})});
  REQUIRE(r.outputs.size() == 1);
  CHECK(r.outputs[0].req_id == "a");
  CHECK(r.outputs[0].text == "Once");
  CHECK(r.reqs_to_abort.empty());
  CHECK(p.num_unfinished() == 1);
}

TEST_CASE("a multi-byte UTF-8 character is never split", "[output_processor]") {
  const Tokenizer tok = tok512();
  OutputProcessor p(tok);
  SECTION("byte tokens wait for the whole character") {
    p.add_request("r", {1}, {});
    const auto outs = run(p, {step("r", {3 + 0xE4}), step("r", {3 + 0xB8}), step("r", {3 + 0xAD, 426})});
    CHECK(texts(outs) == std::vector<std::string>{"", "", "\xE4\xB8\xAD."});
  }
  SECTION("holding back retreats to a character boundary") {
    p.add_request("r", {1}, with_stop({"xyz"}));  // holds back 2 bytes; 465 is 3 bytes
    const auto outs = run(p, {step("r", {403}), step("r", {465}), step("r", {426}), step("r", {261}),
                              step("r", {378}, FinishReason::Length)});
    CHECK(texts(outs) == std::vector<std::string>{"On", "ce", "", "\xE2\x80\x9C.", " a time"});
  }
  SECTION("an incomplete tail at the end becomes U+FFFD") {
    p.add_request("r", {1}, {});
    const auto outs = run(p, {step("r", {403, 3 + 0xE4}), step("r", {3 + 0xB8}, FinishReason::Length)});
    CHECK(texts(outs) == std::vector<std::string>{"Once", "\xEF\xBF\xBD"});
  }
}

TEST_CASE("a request the engine failed ends with its error, not a bare abort", "[output_processor]") {
  const Tokenizer tok = tok512();
  OutputProcessor p(tok);
  p.add_request("r", {1, 403}, {});
  auto failed = step("r", {}, FinishReason::Abort);
  failed.error = "internal error: the worker sampled 2 token(s) for request r, which expects none";
  const auto outs = run(p, {step("r", {407}), failed});
  CHECK(outs[0].error.empty());
  CHECK(outs[1].finish_reason == FinishReason::Abort);
  CHECK(outs[1].error == failed.error);  // the ingress answers it as an error (in-band when streaming)
  CHECK_FALSE(p.has_request("r"));
}
