// Reasoning output (--reasoning-parser): the split of a thinking model's text into reasoning and content, exact for
// every split of the text into deltas (markers cut anywhere), the concatenated stream equal to the whole-output
// split, and the chat response's reasoning_content beside content, streamed and not.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "http/openai_protocol.hpp"
#include "http/reasoning.hpp"
#include "openai_test_util.hpp"

namespace parley::http {
namespace {

using openai_test::context;
using openai_test::parse_ok;
using openai_test::tok512;

// Feeds text cut at the given points; returns the concatenated reasoning and content (nullopt where none came).
SplitReasoning streamed(ReasoningParser p, const std::string& text, const std::vector<size_t>& cuts) {
  ReasoningStream s(p);
  std::vector<ReasoningPiece> pieces;
  size_t at = 0;
  for (size_t cut : cuts) {
    for (ReasoningPiece& r : s.feed(std::string_view(text).substr(at, cut - at))) pieces.push_back(std::move(r));
    at = cut;
  }
  for (ReasoningPiece& r : s.feed(std::string_view(text).substr(at))) pieces.push_back(std::move(r));
  for (ReasoningPiece& r : s.finish()) pieces.push_back(std::move(r));
  SplitReasoning out;
  bool content_started = false;
  for (const ReasoningPiece& r : pieces) {
    REQUIRE_FALSE(r.text.empty());
    if (r.reasoning) REQUIRE_FALSE(content_started);  // reasoning never follows the answer
    content_started = content_started || !r.reasoning;
    std::optional<std::string>& part = r.reasoning ? out.reasoning : out.content;
    part = part.value_or("") + r.text;
  }
  if (!out.content && !out.reasoning) out.content = "";
  return out;
}

}  // namespace

TEST_CASE("reasoning: the split of whole outputs", "[reasoning]") {
  using P = ReasoningParser;
  auto check = [](P p, const std::string& text, std::optional<std::string> reasoning,
                  std::optional<std::string> content) {
    CAPTURE(reasoning_parser_name(p), text);
    const SplitReasoning s = split_reasoning(p, text);
    CHECK(s.reasoning == reasoning);
    CHECK(s.content == content);
  };
  check(P::Qwen3, "<think>\nweigh it\n</think>\n\nYes.", "\nweigh it\n", "\n\nYes.");
  check(P::Qwen3, "Yes, no thinking.", std::nullopt, "Yes, no thinking.");
  check(P::Qwen3, "<think>still thinking", "still thinking", std::nullopt);
  check(P::Qwen3, "<thin", std::nullopt, "<thin");                // an unfinished marker is text
  check(P::Qwen3, "a </think> b", std::nullopt, "a </think> b");  // no opening: all content
  check(P::DeepSeekR1, "plan it</think>The answer.", "plan it", "The answer.");
  check(P::DeepSeekR1, "<think>plan</think>ok", "plan", "ok");
  check(P::DeepSeekR1, "never ends", "never ends", std::nullopt);
  check(P::DeepSeekR1, "</think>direct", std::nullopt, "direct");
  check(P::Qwen3, "", std::nullopt, "");
  CHECK_THROWS_WITH(parse_reasoning_parser("gpt-oss"), Catch::Contains("known: deepseek_r1, qwen3"));
}

TEST_CASE("reasoning: every cut of the text into two or three deltas gives the whole-output split", "[reasoning]") {
  for (ReasoningParser p : {ReasoningParser::Qwen3, ReasoningParser::DeepSeekR1})
    for (const std::string text : {"<think>ab</think>cd", "<think>x</th</think>y</think>", "plain <think> text",
                                   "<think>a<</think>", "</think>", "<think></think>z", "q</think"}) {
      CAPTURE(reasoning_parser_name(p), text);
      const SplitReasoning whole = split_reasoning(p, text);
      for (size_t i = 0; i <= text.size(); ++i)
        for (size_t j = i; j <= text.size(); ++j) {
          CAPTURE(i, j);
          const SplitReasoning s = streamed(p, text, {i, j});
          REQUIRE(s.reasoning == whole.reasoning);
          REQUIRE(s.content == whole.content);
        }
    }
}

TEST_CASE("reasoning: chat responses carry reasoning_content, streamed as reasoning deltas", "[reasoning][openai]") {
  ServingContext ctx = context();
  ctx.reasoning_parser = ReasoningParser::Qwen3;
  auto parsed = parse_generate_request(Endpoint::ChatCompletions,
                                       R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8})", ctx);
  const GenerateRequest req = std::get<GenerateRequest>(parsed);
  REQUIRE(req.reasoning == ReasoningParser::Qwen3);
  Choice c;
  c.text = "<think>hmm</think>Hello";
  c.finish_reason = FinishReason::Length;
  const auto body = nlohmann::json::parse(completion_response(req, "chatcmpl-1", 1, {c}, Usage{3, 5}, tok512()));
  const auto& message = body["choices"][0]["message"];
  CHECK(message["reasoning_content"] == "hmm");
  CHECK(message["reasoning"] == "hmm");
  CHECK(message["content"] == "Hello");
  // Without the parser the markers stay in content, and no reasoning fields appear.
  const GenerateRequest plain =
      parse_ok(Endpoint::ChatCompletions, R"({"messages": [{"role": "user", "content": "Hi"}]})");
  const auto raw = nlohmann::json::parse(completion_response(plain, "chatcmpl-2", 1, {c}, Usage{3, 5}, tok512()));
  CHECK(raw["choices"][0]["message"]["content"] == "<think>hmm</think>Hello");
  CHECK_FALSE(raw["choices"][0]["message"].contains("reasoning_content"));
}

}  // namespace parley::http
