// Reasoning output (--reasoning-parser): the split of a thinking model's text into reasoning and content, exact for
// every split of the text into deltas (markers cut anywhere), the concatenated stream equal to the whole-output
// split, and the chat response's reasoning_content beside content, streamed and not.
#include <catch2/catch.hpp>
#include <fstream>

#include <nlohmann/json.hpp>

#include "http/chat_prompt.hpp"
#include "http/generation.hpp"
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
  out.content_start = s.content_start().value_or(text.size());
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// gpt-oss's Harmony output after the prompt's "<|start|>assistant": thinking, then the answer.
const std::string kHarmony =
    "<|channel|>analysis<|message|>weigh it<|end|><|start|>assistant<|channel|>final<|message|>Yes.<|return|>";

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
  CHECK_THROWS_WITH(parse_reasoning_parser("granite"), Catch::Contains("known: deepseek_r1, qwen3, openai_gptoss"));
  CHECK(parse_reasoning_parser("gpt-oss") == P::GptOss);
  // Harmony: analysis is reasoning; final and commentary are content; headers and markers never show.
  check(P::GptOss, kHarmony, "weigh it", "Yes.");
  check(P::GptOss, "<|channel|>final<|message|>Only this.", std::nullopt, "Only this.");
  check(P::GptOss, "<|channel|>analysis<|message|>still going", "still going", std::nullopt);
  check(P::GptOss, "unformatted text", std::nullopt, "unformatted text");
  check(P::GptOss,
        "<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>commentary to=functions.f "
        "<|constrain|>json<|message|>{\"x\": 1}<|call|>",
        "a", "<|channel|>commentary to=functions.f<|message|>{\"x\": 1}<|call|>");
  check(P::GptOss, "<|channel|>analysis<|message|>a<|end|><|start|>assist", "a", std::nullopt);  // a header cut off
  // A message to a function: content in the one form the openai tool-call parser reads, whichever header order.
  const std::string call = "<|channel|>commentary to=functions.get_weather<|message|>{\"city\":\"Oslo\"}<|call|>";
  check(P::GptOss,
        "<|channel|>analysis<|message|>think<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary "
        "json<|message|>{\"city\":\"Oslo\"}<|call|>",
        "think", call);
  check(P::GptOss, " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\":\"Oslo\"}<|call|>",
        std::nullopt, call);
  check(P::GptOss,
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Oslo\"}<|call|>",
        std::nullopt, call);
}

TEST_CASE("reasoning: a prompt that closed the thinking gets deepseek_r1's answer as content", "[reasoning]") {
  using P = ReasoningParser;
  CHECK(parser_for_prompt(P::DeepSeekR1, "<｜Assistant｜><think>\n") == P::DeepSeekR1);
  CHECK(parser_for_prompt(P::DeepSeekR1, "<｜Assistant｜><think>\n</think>\n\n") == P::Qwen3);
  CHECK(parser_for_prompt(P::Qwen3, "x</think>") == P::Qwen3);
  CHECK(parser_for_prompt(P::GptOss, "x</think>") == P::GptOss);
}

TEST_CASE("reasoning: where the answer starts, for the usage's reasoning tokens", "[reasoning]") {
  CHECK(split_reasoning(ReasoningParser::Qwen3, "<think>ab</think>cd").content_start == 17);
  CHECK(split_reasoning(ReasoningParser::Qwen3, "no thinking").content_start == 0);
  CHECK(split_reasoning(ReasoningParser::DeepSeekR1, "never ends").content_start == 10);  // the whole text
  CHECK(split_reasoning(ReasoningParser::GptOss, kHarmony).content_start == kHarmony.find("Yes."));
}

TEST_CASE("reasoning: auto picks the parser from real chat templates", "[reasoning]") {
  const std::string dir = test::shared_dir() + "/chat_templates/";
  auto detect = [&](const std::string& file) {
    const auto t = make_chat_template(read_file(dir + file), tok512());
    return detect_reasoning_parser(t->source(), generation_prompt(*t, {{"enable_thinking", true}}));
  };
  CHECK(detect("Qwen-Qwen3-0.6B.jinja") == ReasoningParser::Qwen3);
  CHECK(detect("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja") == ReasoningParser::DeepSeekR1);
  CHECK(detect("openai-gpt-oss-120b.jinja") == ReasoningParser::GptOss);
  CHECK(detect("meta-llama-Llama-3.1-8B-Instruct.jinja") == std::nullopt);
  CHECK(generation_prompt(*make_chat_template(read_file(dir + "openai-gpt-oss-120b.jinja"), tok512())) ==
        "<|start|>assistant");
}

TEST_CASE("reasoning: every cut of the text into two or three deltas gives the whole-output split", "[reasoning]") {
  const std::vector<std::string> think = {"<think>ab</think>cd",
                                          "<think>x</th</think>y</think>",
                                          "plain <think> text",
                                          "<think>a<</think>",
                                          "</think>",
                                          "<think></think>z",
                                          "q</think"};
  const std::vector<std::string> harmony = {kHarmony,
                                            "<|channel|>analysis<|message|>a<|e<|end|>",
                                            "<|",
                                            "x<|y",
                                            "<|channel|>analysis<|message|>t<|end|><|start|>assistant to=functions.f"
                                            "<|channel|>commentary json<|message|>{}<|call|>",
                                            "<|channel|>final<|message|><|channel|>analysis<|message|>z"};
  for (ReasoningParser p : {ReasoningParser::Qwen3, ReasoningParser::DeepSeekR1, ReasoningParser::GptOss})
    for (const std::string& text : p == ReasoningParser::GptOss ? harmony : think) {
      CAPTURE(reasoning_parser_name(p), text);
      const SplitReasoning whole = split_reasoning(p, text);
      for (size_t i = 0; i <= text.size(); ++i)
        for (size_t j = i; j <= text.size(); ++j) {
          CAPTURE(i, j);
          const SplitReasoning s = streamed(p, text, {i, j});
          REQUIRE(s.reasoning == whole.reasoning);
          REQUIRE(s.content == whole.content);
          REQUIRE(s.content_start == whole.content_start);
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

TEST_CASE("reasoning: usage counts the tokens before the answer, streamed and not", "[reasoning][openai]") {
  ServingContext ctx = context();
  ctx.reasoning_parser = ReasoningParser::Qwen3;
  const GenerateRequest req = std::get<GenerateRequest>(parse_generate_request(
      Endpoint::ChatCompletions,
      R"({"messages": [{"role": "user", "content": "Hi"}], "stream": true, "stream_options": {"include_usage": true}})",
      ctx));
  // Five tokens: "<think>", "a", "</think>" (the reasoning's three), "Hel", "lo".
  for (Transport transport : {Transport::Json, Transport::Sse}) {
    GenerateRequest r = req;
    r.stream = transport == Transport::Sse;
    Generation g(r, "chatcmpl-u", 1, tok512(), transport);
    std::string out;
    const std::vector<std::string> deltas = {"<think>", "a", "</think>", "Hel", "lo"};
    for (size_t i = 0; i < deltas.size(); ++i) {
      RequestOutput o;
      o.req_id = "chatcmpl-u-0";
      o.text = deltas[i];
      o.token_ids = {int(i) + 10};
      o.num_output_tokens = int(i) + 1;
      if (i + 1 == deltas.size()) o.finish_reason = FinishReason::Stop;
      out += g.on_output(o);
    }
    out += g.closing_text();
    CAPTURE(out);
    const size_t at = out.rfind("\"usage\"");
    REQUIRE(at != std::string::npos);
    CHECK(out.find("\"completion_tokens_details\":{\"reasoning_tokens\":3}", at) != std::string::npos);
    CHECK(out.find("\"completion_tokens\":5", at) != std::string::npos);
  }
}

}  // namespace parley::http
