// OpenAI response shapes, compared as parsed JSON: text_completion, chat.completion, SSE chunks
// (chat.completion.chunk, the usage chunk, in-band errors), /v1/models, /tokenize and /detokenize.
#include <catch2/catch.hpp>

#include <cmath>
#include <nlohmann/json.hpp>

#include "http/openai_protocol.hpp"
#include "tests/openai_test_util.hpp"

using namespace parley;
using namespace parley::http;
using namespace parley::openai_test;
using json = nlohmann::json;

namespace {

TokenLogprobs lp(int token, float logprob, std::vector<std::pair<int, float>> top = {}) {
  return TokenLogprobs{token, logprob, 1, std::move(top)};
}

json body_of(const std::variant<std::string, ApiError>& r) {
  if (auto* e = std::get_if<ApiError>(&r)) FAIL(e->message);
  return json::parse(std::get<std::string>(r));
}

}  // namespace

TEST_CASE("text_completion: choices, finish and stop reasons, usage", "[openai]") {
  const GenerateRequest req = parse_ok(Endpoint::Completions, R"({"prompt": "Lily", "n": 2})");
  std::vector<Choice> choices(2);
  choices[0] = {0, " was", {286}, {}, FinishReason::Length, {}};
  choices[1] = {1, " the day", {265, 328}, {}, FinishReason::Stop, StopReason(2)};
  const json got = json::parse(completion_response(req, "cmpl-1", kCreated, choices, {3, 3}, tok512()));
  const json expected = R"({"id": "cmpl-1", "object": "text_completion", "created": 1700000000, "model": "stories260K",
      "choices": [{"index": 0, "text": " was", "logprobs": null, "finish_reason": "length", "stop_reason": null},
                  {"index": 1, "text": " the day", "logprobs": null, "finish_reason": "stop", "stop_reason": 2}],
      "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}})"_json;
  CHECK(got == expected);
}

TEST_CASE("text_completion logprobs: token strings after BOS, top alternatives, offsets, -9999 floor", "[openai]") {
  // Prompt [BOS]: the first token's leading space is dropped, as the detokenizer does.
  const GenerateRequest req = parse_ok(Endpoint::Completions, R"({"prompt": [1], "logprobs": 1})");
  const Choice c{0,
                 "The was",
                 {291, 286, 2},
                 {lp(291, -0.25f, {{291, -0.25f}}), lp(286, -1.5f, {{265, -0.5f}}), lp(2, -INFINITY, {{2, -INFINITY}})},
                 FinishReason::Stop,
                 {}};
  const json got = json::parse(completion_response(req, "cmpl-2", kCreated, {c}, {1, 3}, tok512()));
  const json expected = R"({"tokens": ["The", " was", ""], "token_logprobs": [-0.25, -1.5, -9999.0],
      "top_logprobs": [{"The": -0.25}, {" was": -1.5, " the": -0.5}, {"": -9999.0}], "text_offset": [0, 3, 7]})"_json;
  CHECK(got["choices"][0]["logprobs"] == expected);
  CHECK(got["choices"][0]["stop_reason"] == nullptr);
}

TEST_CASE("chat.completion: message, logprobs content with bytes and top_logprobs", "[openai]") {
  const GenerateRequest req =
      parse_ok(Endpoint::ChatCompletions,
               R"({"messages": [{"role": "user", "content": "Hi"}], "logprobs": true, "top_logprobs": 1})");
  const Choice c{0,
                 " was the",
                 {286, 265},
                 {lp(286, -0.5f, {{286, -0.5f}}), lp(265, -1.0f, {{328, -0.75f}})},
                 FinishReason::Stop,
                 StopReason(std::string("xy"))};
  const json got = json::parse(completion_response(req, "chatcmpl-1", kCreated, {c}, {8, 2}, tok512()));
  const json expected =
      R"({"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "stories260K",
      "choices": [{"index": 0, "message": {"role": "assistant", "content": " was the", "refusal": null},
        "logprobs": {"content": [
          {"token": " was", "logprob": -0.5, "bytes": [32, 119, 97, 115],
           "top_logprobs": [{"token": " was", "logprob": -0.5, "bytes": [32, 119, 97, 115]}]},
          {"token": " the", "logprob": -1.0, "bytes": [32, 116, 104, 101],
           "top_logprobs": [{"token": " day", "logprob": -0.75, "bytes": [32, 100, 97, 121]}]}], "refusal": null},
        "finish_reason": "stop", "stop_reason": "xy"}],
      "usage": {"prompt_tokens": 8, "completion_tokens": 2, "total_tokens": 10}})"_json;
  CHECK(got == expected);
}

TEST_CASE("completion stream: echo on the first chunk, no usage until the usage chunk", "[openai]") {
  const GenerateRequest req =
      parse_ok(Endpoint::Completions,
               R"({"prompt": "Lily", "echo": true, "stream": true, "stream_options": {"include_usage": true}})");
  RequestOutput d1;
  d1.token_ids = {286};
  d1.text = " was";
  const std::string first = stream_chunk(req, "cmpl-3", kCreated, 0, d1, tok512(), true);
  CHECK_THAT(first, Catch::StartsWith("data: ") && Catch::EndsWith("\n\n"));
  CHECK(events(first) == std::vector<json>{R"({"id": "cmpl-3", "object": "text_completion", "created": 1700000000,
      "model": "stories260K", "choices": [{"index": 0, "text": "Lily was", "logprobs": null, "finish_reason": null,
      "stop_reason": null}]})"_json});  // CreateCompletionResponse's usage may be absent, never null

  RequestOutput d2;
  d2.token_ids = {265};
  d2.text = " the";
  d2.finish_reason = FinishReason::Length;
  const json last = events(stream_chunk(req, "cmpl-3", kCreated, 0, d2, tok512(), false)).at(0);
  CHECK(last["choices"][0] ==
        R"({"index": 0, "text": " the", "logprobs": null, "finish_reason": "length", "stop_reason": null})"_json);

  CHECK(
      events(stream_usage_chunk(req, "cmpl-3", kCreated, {2, 2})) ==
      std::vector<json>{
          R"({"id": "cmpl-3", "object": "text_completion", "created": 1700000000, "model": "stories260K", "choices": [],
          "usage": {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4}})"_json});
  CHECK(kStreamDone == "data: [DONE]\n\n");
}

TEST_CASE("completion stream: the cursor carries text offsets and the previous token", "[openai]") {
  const GenerateRequest req = parse_ok(Endpoint::Completions, R"({"prompt": [1], "logprobs": 0, "stream": true})");
  StreamCursor cursor;
  RequestOutput d;
  d.token_ids = {291};
  d.text = "The";
  d.logprobs = {lp(291, -0.5f)};
  json c = events(stream_chunk(req, "cmpl-4", kCreated, 0, d, tok512(), true, &cursor)).at(0);
  CHECK(c["choices"][0]["logprobs"] ==
        R"({"tokens": ["The"], "token_logprobs": [-0.5], "top_logprobs": [{"The": -0.5}], "text_offset": [0]})"_json);
  CHECK(cursor.text_offset == 3);
  CHECK(cursor.prev_token == 291);
  d.token_ids = {286};
  d.text = " was";
  d.logprobs = {lp(286, -1.0f)};
  c = events(stream_chunk(req, "cmpl-4", kCreated, 0, d, tok512(), false, &cursor)).at(0);
  CHECK(c["choices"][0]["logprobs"] ==
        R"({"tokens": [" was"], "token_logprobs": [-1.0], "top_logprobs": [{" was": -1.0}], "text_offset": [3]})"_json);
  CHECK(c.count("usage") == 0);  // no include_usage: no usage key at all
}

TEST_CASE("chat stream: a role chunk first, raw bytes of split UTF-8, finish and abort", "[openai]") {
  const GenerateRequest req =
      parse_ok(Endpoint::ChatCompletions,
               R"({"messages": [{"role": "user", "content": "Hi"}], "stream": true, "logprobs": true})");
  RequestOutput d;
  d.token_ids = {3 + 0xC3, 3 + 0xA9};  // the byte tokens of "é"
  d.text = "\xC3\xA9";
  d.logprobs = {lp(3 + 0xC3, -0.125f), lp(3 + 0xA9, -0.25f)};
  const std::vector<json> first = events(stream_chunk(req, "chatcmpl-2", kCreated, 0, d, tok512(), true));
  REQUIRE(first.size() == 2);
  CHECK(first[0] ==
        R"({"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1700000000, "model": "stories260K",
      "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null,
                   "finish_reason": null}]})"_json);
  CHECK(first[1]["choices"][0] == R"({"index": 0, "delta": {"content": "é"}, "finish_reason": null,
      "logprobs": {"content": [{"token": "\ufffd", "logprob": -0.125, "bytes": [195], "top_logprobs": []},
                               {"token": "\ufffd", "logprob": -0.25, "bytes": [169], "top_logprobs": []}],
                   "refusal": null}})"_json);

  RequestOutput end;
  end.token_ids = {2};
  end.logprobs = {lp(2, -0.5f)};
  end.finish_reason = FinishReason::Stop;
  end.stop_reason = 2;
  CHECK(events(stream_chunk(req, "chatcmpl-2", kCreated, 0, end, tok512(), false)).at(0)["choices"][0] ==
        R"({"index": 0, "delta": {"content": ""}, "finish_reason": "stop", "stop_reason": 2,
            "logprobs": {"content": [{"token": "", "logprob": -0.5, "bytes": [], "top_logprobs": []}],
                         "refusal": null}})"_json);

  RequestOutput aborted;
  aborted.finish_reason = FinishReason::Abort;
  const json a = events(stream_chunk(req, "chatcmpl-2", kCreated, 1, aborted, tok512(), false)).at(0)["choices"][0];
  CHECK(a == R"({"index": 1, "delta": {"content": ""}, "logprobs": null, "finish_reason": "abort",
                 "stop_reason": null})"_json);
}

TEST_CASE("errors: body and in-band stream event in OpenAI's shape, code a string or null", "[openai]") {
  const ApiError e{400, "boom", "BadRequestError", "", ""};
  CHECK(error_body(e) == R"({"error":{"message":"boom","type":"BadRequestError","param":null,"code":null}})");
  CHECK(stream_error_event(e) == "data: " + error_body(e) + "\n\n");
  const ApiError coded{503, "queue full", "ServiceUnavailableError", "", "queue_full"};
  CHECK(json::parse(error_body(coded))["error"]["code"] == "queue_full");
  // The websocket has no HTTP status line: the message carries it beside OpenAI's error object.
  CHECK(json::parse(websocket_error(coded, "a1")) == R"({"id": "a1", "type": "error", "status": 503, "error":
      {"message": "queue full", "type": "ServiceUnavailableError", "param": null, "code": "queue_full"}})"_json);
}

TEST_CASE("/v1/models lists the served model with its architecture, context and vocabulary", "[openai]") {
  ServingContext ctx = context();
  ctx.architecture = "qwen3";
  ctx.context_length = 40960;
  ctx.vocab_size = 151936;
  ctx.parameters = ctx.active_parameters = 596049920;
  CHECK(json::parse(models_response(ctx, kCreated)) == R"({"object": "list", "data": [{"id": "stories260K",
      "object": "model", "created": 1700000000, "owned_by": "parley", "max_model_len": 64, "architecture": "qwen3",
      "context_length": 40960, "vocab_size": 151936, "parameters": 596049920, "active_parameters": 596049920}]})"_json);
  // A mixture of experts: its experts, and the parameters a token runs through.
  ctx.architecture = "qwen3moe";
  ctx.parameters = 30532122624, ctx.active_parameters = 3345357824;
  ctx.n_experts = 128, ctx.n_experts_used = 8;
  const json card = json::parse(models_response(ctx, kCreated))["data"][0];
  CHECK(card["experts"] == R"({"count": 128, "used_per_token": 8})"_json);
  CHECK(card["active_parameters"] == 3345357824);
}

TEST_CASE("/tokenize: a prompt or chat messages, BOS per add_special_tokens", "[openai]") {
  const ServingContext ctx = context();
  const std::vector<int> lily = tok512().encode("Lily was", true);
  CHECK(body_of(tokenize_response(R"({"prompt": "Lily was"})", ctx)) ==
        json{{"count", lily.size()}, {"max_model_len", 64}, {"tokens", lily}});
  CHECK(body_of(tokenize_response(R"({"prompt": "Lily", "add_special_tokens": false, "model": "stories260K"})",
                                  ctx))["tokens"] == json(tok512().encode("Lily", false)));
  CHECK(body_of(tokenize_response(R"({"prompt": "Lily", "return_token_strs": true})", ctx))["token_strs"] ==
        json{"", "Lily"});
  // Messages tokenize to exactly the prompt /v1/chat/completions runs.
  const std::string msgs = R"({"messages": [{"role": "user", "content": "Hi"}]})";
  CHECK(body_of(tokenize_response(msgs, ctx))["tokens"] == json(parse_ok(Endpoint::ChatCompletions, msgs).prompts[0]));

  auto error = [&](const std::string& body) {
    auto r = tokenize_response(body, ctx);
    REQUIRE(std::holds_alternative<ApiError>(r));
    return std::get<ApiError>(r);
  };
  check_error(error("{}"), 400, "BadRequestError", "prompt", "Exactly one of 'prompt' and 'messages' must be given.");
  check_error(error(R"({"prompt": "a", "messages": []})"), 400, "BadRequestError", "messages",
              "Exactly one of 'prompt' and 'messages' must be given.");
  check_error(error(R"({"prompt": "a", "stream": true})"), 400, "BadRequestError", "stream",
              "Unrecognized request argument supplied: stream");
  check_error(error(R"({"prompt": 5})"), 400, "BadRequestError", "prompt",
              "Invalid type for 'prompt': expected a string, but got an integer instead.");
  check_error(error(R"({"model": "m", "prompt": "a"})"), 404, "NotFoundError", "model", "The model `m` does not exist.",
              "model_not_found");
}

TEST_CASE("/detokenize turns ids to text and refuses unknown ids and wrong types", "[openai]") {
  const ServingContext ctx = context();
  // Special tokens come back as their text (vLLM: skip_special_tokens=False).
  CHECK(body_of(detokenize_response(R"({"tokens": [1, 317, 286]})", ctx)) == R"({"prompt": "<s>Lily was"})"_json);
  CHECK(body_of(detokenize_response(R"({"tokens": [317, 286]})", ctx)) == R"({"prompt": " Lily was"})"_json);
  // A lone UTF-8 lead byte becomes U+FFFD instead of breaking the JSON.
  CHECK(body_of(detokenize_response(R"({"tokens": [198]})", ctx)) == R"({"prompt": "\ufffd"})"_json);
  auto error = [&](const std::string& body) {
    auto r = detokenize_response(body, ctx);
    REQUIRE(std::holds_alternative<ApiError>(r));
    return std::get<ApiError>(r);
  };
  check_error(error(R"({"tokens": [1, 600]})"), 400, "BadRequestError", "tokens", "Token id 600 is out of vocabulary");
  check_error(error(R"({"tokens": "abc"})"), 400, "BadRequestError", "tokens",
              "Invalid type for 'tokens': expected an array of token ids, but got a string instead.");
  check_error(error("{}"), 400, "BadRequestError", "tokens", "Missing required parameter: 'tokens'.");
  check_error(error("{"), 400, "BadRequestError", "",
              "Invalid JSON body: [json.exception.parse_error.101] parse error at line 1, column 2: syntax error while "
              "parsing object key - unexpected end of input; expected string literal");
}
