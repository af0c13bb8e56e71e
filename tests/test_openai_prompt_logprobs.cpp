// vLLM's prompt_logprobs and OpenAI's echo with logprobs over HTTP: what parses (and the 400s), the
// prompt_logprobs array (null, then the prompt token and its alternatives by id), echoed logprobs led by the
// prompt's tokens, the first stream chunk of each choice carrying them, and Generation passing them on.
#include <catch2/catch.hpp>

#include <cmath>
#include <nlohmann/json.hpp>

#include "http/generation.hpp"
#include "tests/openai_test_util.hpp"

using namespace parley;
using namespace parley::http;
using namespace parley::openai_test;
using json = nlohmann::json;

namespace {

// The prompt [BOS, "The", " was"] (ids 1, 291, 286), scored: "The" ranked 2nd behind "the" (265), " was" first.
const std::vector<TokenLogprobs> kPromptScores = {{291, -0.5f, 2, {{265, -0.25f}, {291, -0.5f}}},
                                                  {286, -INFINITY, 1, {{286, -INFINITY}, {265, -3.0f}}}};

const json kPromptLogprobsTop1 = R"([null,
    {"291": {"logprob": -0.5, "rank": 2, "decoded_token": "The"},
     "265": {"logprob": -0.25, "rank": 1, "decoded_token": "the"}},
    {"286": {"logprob": -9999.0, "rank": 1, "decoded_token": " was"}}])"_json;

}  // namespace

TEST_CASE("prompt_logprobs parses on both endpoints, and echo with logprobs scores the prompt",
          "[openai][prompt_logprobs]") {
  GenerateRequest r = parse_ok(Endpoint::Completions, R"({"prompt": "Hi", "prompt_logprobs": 3})");
  CHECK(r.prompt_logprobs == 3);
  CHECK(r.params.prompt_logprobs == 3);
  r = parse_ok(Endpoint::Completions, R"({"prompt": "Hi", "prompt_logprobs": 0})");
  CHECK((r.prompt_logprobs == 0 && r.params.prompt_logprobs == 0));
  r = parse_ok(Endpoint::Completions, R"({"prompt": "Hi", "prompt_logprobs": 20, "stream": true})");
  CHECK(r.params.prompt_logprobs == 20);
  // echo + logprobs: the engine scores the prompt with logprobs' count; no prompt_logprobs field in the response.
  r = parse_ok(Endpoint::Completions, R"({"prompt": "Hi", "echo": true, "logprobs": 2})");
  CHECK((r.prompt_logprobs == -1 && r.params.prompt_logprobs == 2 && r.params.logprobs == 2));
  r = parse_ok(Endpoint::Completions, R"({"prompt": "Hi", "echo": true, "logprobs": 2, "prompt_logprobs": 5})");
  CHECK((r.prompt_logprobs == 5 && r.params.prompt_logprobs == 5));
  r = parse_ok(Endpoint::Completions, R"({"prompt": "Hi", "echo": true, "logprobs": 4, "prompt_logprobs": 1})");
  CHECK((r.prompt_logprobs == 1 && r.params.prompt_logprobs == 4));
  r = parse_ok(Endpoint::Completions, R"({"prompt": "Hi", "echo": true})");
  CHECK_FALSE(r.params.prompt_logprobs.has_value());
  r = parse_ok(Endpoint::Completions, R"({"prompt": "Hi", "logprobs": 2, "prompt_logprobs": null})");
  CHECK_FALSE(r.params.prompt_logprobs.has_value());
  r = parse_ok(Endpoint::ChatCompletions, R"({"messages": [{"role": "user", "content": "Hi"}], "prompt_logprobs": 2})");
  CHECK((r.prompt_logprobs == 2 && r.params.prompt_logprobs == 2));
}

TEST_CASE("prompt_logprobs out of range or of the wrong type is a 400 naming it", "[openai][prompt_logprobs]") {
  const std::string type = "BadRequestError";
  for (Endpoint ep : {Endpoint::Completions, Endpoint::ChatCompletions}) {
    const std::string head =
        ep == Endpoint::Completions ? R"({"prompt": "Hi", )" : R"({"messages": [{"role": "user", "content": "Hi"}], )";
    CAPTURE(head);
    check_error(parse_error(ep, head + R"("prompt_logprobs": 21})"), 400, type, "prompt_logprobs",
                "Requested prompt logprobs of 21, which is greater than max allowed: 20");
    check_error(parse_error(ep, head + R"("prompt_logprobs": -1})"), 400, type, "prompt_logprobs",
                "`prompt_logprobs` must be a non-negative integer, got -1.");
    check_error(parse_error(ep, head + R"("prompt_logprobs": "2"})"), 400, type, "prompt_logprobs",
                "Invalid type for 'prompt_logprobs': expected an integer, but got a string instead.");
    check_error(parse_error(ep, head + R"("prompt_logprobs": 1.5})"), 400, type, "prompt_logprobs",
                "Invalid type for 'prompt_logprobs': expected an integer, but got a decimal instead.");
    check_error(parse_error(ep, head + R"("prompt_logprobs": true})"), 400, type, "prompt_logprobs",
                "Invalid type for 'prompt_logprobs': expected an integer, but got a boolean instead.");
  }
  // echo stays a completions field; echo's prompt scores obey logprobs' own limit.
  check_error(parse_error(Endpoint::Completions, R"({"prompt": "Hi", "echo": true, "logprobs": 21})"), 400, type,
              "logprobs", "Requested sample logprobs of 21, which is greater than max allowed: 20");
}

TEST_CASE("text_completion prompt_logprobs: null first, the prompt token with its rank, then the top alternatives",
          "[openai][prompt_logprobs]") {
  const GenerateRequest req =
      parse_ok(Endpoint::Completions, R"({"prompt": [1, 291, 286], "prompt_logprobs": 1, "n": 2, "temperature": 1})");
  std::vector<Choice> choices(2);
  choices[0] = {0, " the", {265}, {}, FinishReason::Length, {}, kPromptScores};
  choices[1] = {1, " day", {328}, {}, FinishReason::Length, {}, kPromptScores};
  const json got = json::parse(completion_response(req, "cmpl-1", kCreated, choices, {3, 2}, tok512()));
  for (int i = 0; i < 2; ++i) {
    CAPTURE(i);
    CHECK(got["choices"][i]["prompt_logprobs"] == kPromptLogprobsTop1);  // every choice carries the prompt's
    CHECK(got["choices"][i]["logprobs"] == nullptr);
  }
  // The field follows stop_reason, as vLLM orders a choice; 0 alternatives leave only the prompt token.
  const auto ordered =
      nlohmann::ordered_json::parse(completion_response(req, "cmpl-1", kCreated, choices, {3, 2}, tok512()));
  std::vector<std::string> keys;
  for (const auto& [key, value] : ordered["choices"][0].items()) keys.push_back(key);
  CHECK(keys ==
        std::vector<std::string>{"index", "text", "logprobs", "finish_reason", "stop_reason", "prompt_logprobs"});
  const GenerateRequest zero = parse_ok(Endpoint::Completions, R"({"prompt": [1, 291, 286], "prompt_logprobs": 0})");
  const json only = json::parse(completion_response(zero, "cmpl-2", kCreated, {choices[0]}, {3, 1}, tok512()));
  CHECK(only["choices"][0]["prompt_logprobs"][1] ==
        R"({"291": {"logprob": -0.5, "rank": 2, "decoded_token": "The"}})"_json);
  // A request that did not ask gets no field; one aborted before scoring gets null.
  const GenerateRequest plain = parse_ok(Endpoint::Completions, R"({"prompt": [1, 291, 286]})");
  CHECK_FALSE(json::parse(completion_response(plain, "cmpl-3", kCreated, {choices[0]}, {3, 1}, tok512()))["choices"][0]
                  .contains("prompt_logprobs"));
  Choice aborted{0, "", {}, {}, FinishReason::Abort, {}, {}};
  CHECK(json::parse(completion_response(req, "cmpl-4", kCreated, {aborted}, {3, 0},
                                        tok512()))["choices"][0]["prompt_logprobs"] == nullptr);
  // A one-token prompt has nothing to score: [null].
  const GenerateRequest one = parse_ok(Endpoint::Completions, R"({"prompt": [1], "prompt_logprobs": 2})");
  CHECK(json::parse(completion_response(one, "cmpl-5", kCreated, {aborted}, {1, 0},
                                        tok512()))["choices"][0]["prompt_logprobs"] == json::array({nullptr}));
}

TEST_CASE("echo with logprobs: the prompt's tokens lead, the first with nulls, offsets from the echoed prompt",
          "[openai][prompt_logprobs]") {
  const GenerateRequest req =
      parse_ok(Endpoint::Completions, R"({"prompt": [1, 291, 286], "echo": true, "logprobs": 1})");
  REQUIRE(req.prompt_texts[0] == "The was");
  const Choice c{0, "The was the", {265}, {{265, -0.75f, 1, {{265, -0.75f}}}}, FinishReason::Length, {}, kPromptScores};
  const json got = json::parse(completion_response(req, "cmpl-1", kCreated, {c}, {3, 1}, tok512()));
  const json expected = R"({"tokens": ["", "The", " was", " the"], "token_logprobs": [null, -0.5, -9999.0, -0.75],
      "top_logprobs": [null, {"The": -0.5, "the": -0.25}, {" was": -9999.0}, {" the": -0.75}],
      "text_offset": [0, 0, 3, 7]})"_json;
  CHECK(got["choices"][0]["logprobs"] == expected);
  CHECK(got["choices"][0]["text"] == "The was the");
  CHECK_FALSE(got["choices"][0].contains("prompt_logprobs"));  // not asked for by name
}

TEST_CASE("streams: each choice's first chunk carries the prompt logprobs and the echoed prompt's",
          "[openai][prompt_logprobs]") {
  const GenerateRequest req =
      parse_ok(Endpoint::Completions,
               R"({"prompt": [1, 291, 286], "echo": true, "logprobs": 1, "prompt_logprobs": 1, "stream": true})");
  RequestOutput first;
  first.token_ids = {265}, first.text = " the", first.logprobs = {{265, -0.75f, 1, {{265, -0.75f}}}};
  first.prompt_logprobs = kPromptScores;
  StreamCursor cursor;
  const std::vector<json> one = events(stream_chunk(req, "cmpl-1", kCreated, 0, first, tok512(), true, &cursor));
  REQUIRE(one.size() == 1);
  const json& choice = one[0]["choices"][0];
  CHECK(choice["text"] == "The was the");
  CHECK(choice["prompt_logprobs"] == kPromptLogprobsTop1);
  CHECK(choice["logprobs"]["tokens"] == R"(["", "The", " was", " the"])"_json);
  CHECK(choice["logprobs"]["token_logprobs"] == R"([null, -0.5, -9999.0, -0.75])"_json);
  CHECK(choice["logprobs"]["text_offset"] == R"([0, 0, 3, 7])"_json);
  RequestOutput next;
  next.token_ids = {328}, next.text = " day", next.logprobs = {{328, -1.25f, 1, {{328, -1.25f}}}};
  const std::vector<json> two = events(stream_chunk(req, "cmpl-1", kCreated, 0, next, tok512(), false, &cursor));
  CHECK_FALSE(two[0]["choices"][0].contains("prompt_logprobs"));
  CHECK(two[0]["choices"][0]["logprobs"] == R"({"tokens": [" day"], "token_logprobs": [-1.25],
      "top_logprobs": [{" day": -1.25}], "text_offset": [11]})"_json);
}

TEST_CASE("chat: prompt_logprobs on the response, and on each choice's role chunk when streamed",
          "[openai][prompt_logprobs]") {
  GenerateRequest req =
      parse_ok(Endpoint::ChatCompletions, R"({"messages": [{"role": "user", "content": "Hi"}], "prompt_logprobs": 1})");
  req.prompts = {{1, 291, 286}};  // the rendered prompt, fixed for the test
  const Choice c{0, " the", {265}, {}, FinishReason::Stop, {}, kPromptScores};
  const json got = json::parse(completion_response(req, "chatcmpl-1", kCreated, {c}, {3, 1}, tok512()));
  CHECK(got["prompt_logprobs"] == kPromptLogprobsTop1);
  CHECK_FALSE(got["choices"][0].contains("prompt_logprobs"));
  req.stream = true;
  RequestOutput first;
  first.token_ids = {265}, first.text = " the", first.prompt_logprobs = kPromptScores;
  const std::vector<json> chunks = events(stream_chunk(req, "chatcmpl-1", kCreated, 0, first, tok512(), true));
  REQUIRE(chunks.size() == 2);
  CHECK(chunks[0]["choices"][0]["delta"]["role"] == "assistant");
  CHECK(chunks[0]["choices"][0]["prompt_logprobs"] == kPromptLogprobsTop1);
  CHECK_FALSE(chunks[1]["choices"][0].contains("prompt_logprobs"));
}

TEST_CASE("Generation: the first output's prompt logprobs open the stream even with its text held back",
          "[openai][prompt_logprobs]") {
  GenerateRequest req =
      parse_ok(Endpoint::Completions, R"({"prompt": [1, 291, 286], "prompt_logprobs": 1, "stream": true})");
  Generation sse(req, "cmpl-9", kCreated, tok512(), Transport::Sse);
  RequestOutput held;  // a stop string may be forming: no text yet
  held.req_id = "cmpl-9-0", held.token_ids = {265}, held.prompt_logprobs = kPromptScores;
  const std::vector<json> opened = events(sse.on_output(held));
  REQUIRE(opened.size() == 1);
  CHECK(opened[0]["choices"][0]["prompt_logprobs"] == kPromptLogprobsTop1);
  CHECK(opened[0]["choices"][0]["text"] == "");
  req.stream = false;
  Generation body(req, "cmpl-9", kCreated, tok512(), Transport::Json);
  body.on_output(held);
  RequestOutput last;
  last.req_id = "cmpl-9-0", last.token_ids = {328}, last.text = " the day", last.finish_reason = FinishReason::Length;
  last.num_output_tokens = 2;
  body.on_output(last);
  REQUIRE(body.done());
  CHECK(json::parse(body.closing_text())["choices"][0]["prompt_logprobs"] == kPromptLogprobsTop1);
}
