// The OpenAI protocol on the real tok512 tokenizer: every invalid request gives its status and exact
// error fields, valid ones the expected token ids and sampling params.
// Rendering (responses, SSE chunks, /v1/models, /tokenize) is in test_openai_render.cpp.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <random>

#include "engine/structured_output/grammar.hpp"
#include "http/chat_prompt.hpp"
#include "http/openai_protocol.hpp"
#include "tests/openai_test_util.hpp"

using namespace parley;
using namespace parley::http;
using namespace parley::openai_test;
using json = nlohmann::json;

namespace {

struct Bad {
  std::string body;
  std::string param;    // "" for null
  std::string message;  // exact
};

void check_all(Endpoint ep, const std::vector<Bad>& cases) {
  for (const auto& c : cases) {
    INFO(c.body);
    check_error(parse_error(ep, c.body), 400, "BadRequestError", c.param, c.message);
  }
}

std::string ids_prompt(int n) {  // a token-id prompt of n tokens
  json ids = json::array();
  for (int i = 0; i < n; ++i) ids.push_back(265);
  return ids.dump();
}

}  // namespace

TEST_CASE("completions: out-of-range sampling params give vLLM's messages", "[openai]") {
  const std::string p = R"("prompt": "Hi", )";
  check_all(
      Endpoint::Completions,
      {
          {"{" + p + R"("max_tokens": 0})", "max_tokens", "max_tokens must be at least 1, got 0."},
          {"{" + p + R"("max_tokens": -5})", "max_tokens", "max_tokens must be at least 1, got -5."},
          {"{" + p + R"("temperature": -0.5})", "temperature", "temperature must be non-negative, got -0.5."},
          {"{" + p + R"("top_p": 0})", "top_p", "top_p must be in (0, 1], got 0.0."},
          {"{" + p + R"("top_p": 1.5})", "top_p", "top_p must be in (0, 1], got 1.5."},
          {"{" + p + R"("top_k": -2})", "top_k", "top_k must be -1 (disable), or at least 1, got -2."},
          {"{" + p + R"("min_p": 2})", "min_p", "min_p must be in [0, 1], got 2.0."},
          {"{" + p + R"("presence_penalty": 2.5})", "presence_penalty",
           "presence_penalty must be in [-2, 2], got 2.5."},
          {"{" + p + R"("frequency_penalty": -3})", "frequency_penalty",
           "frequency_penalty must be in [-2, 2], got -3.0."},
          {"{" + p + R"("repetition_penalty": 0})", "repetition_penalty",
           "repetition_penalty must be in (0, 2], got 0.0."},
          {"{" + p + R"("repetition_penalty": 2.5})", "repetition_penalty",
           "repetition_penalty must be in (0, 2], got 2.5."},
          {"{" + p + R"("logprobs": 21})", "logprobs",
           "Requested sample logprobs of 21, which is greater than max allowed: 20"},
          {"{" + p + R"("logprobs": -1})", "logprobs", "`logprobs` must be a positive value."},
          {"{" + p + R"("n": 0})", "n", "n must be at least 1, got 0."},
          {"{" + p + R"("n": 65})", "n", "n must be at most 64 (--max-n), got 65."},
          {"{" + p + R"("min_tokens": -1})", "min_tokens", "min_tokens must be greater than or equal to 0, got -1."},
          {"{" + p + R"("min_tokens": 5, "max_tokens": 3})", "min_tokens",
           "min_tokens must be less than or equal to max_tokens=3, got 5."},
          {"{" + p + R"("temperature": 0, "n": 2})", "n", "n must be 1 when using greedy sampling, got 2."},
          {"{" + p + R"("stop": ["a", ""]})", "stop", "stop cannot contain an empty string."},
          {"{" + p + R"("stop_token_ids": [2, 999]})", "stop_token_ids", "Token id 999 is out of vocabulary"},
          {"{" + p + R"("logit_bias": {"600": 1}})", "logit_bias",
           "token_id(s) [600] in logit_bias contain out-of-vocab token ids. Vocabulary size: 512"},
          {"{" + p + R"("logit_bias": {"x1": 1}})", "logit_bias",
           "Found token_id `x1` in logit_bias but token_id must be an integer or string representing an integer"},
          {"{" + p + R"("max_tokens": 10000000000})", "max_tokens",
           "Invalid value for 'max_tokens': 10000000000 is out of range."},
      });
}

TEST_CASE("completions: prompts that are empty, unknown or over the context are refused", "[openai]") {
  const std::string empty = "The prompt cannot be empty.";
  check_all(
      Endpoint::Completions,
      {
          {R"({"prompt": ""})", "prompt", empty},
          {R"({"prompt": []})", "prompt", empty},
          {R"({"prompt": ["a", ""]})", "prompt", empty},
          {R"({"prompt": [[5], []]})", "prompt", empty},
          {R"({"max_tokens": 3})", "prompt", empty},
          {R"({"prompt": null})", "prompt", empty},
          {R"({"prompt": [1, 2, 600]})", "prompt", "Token id 600 is out of vocabulary"},
          {R"({"prompt": [[5], [-1]]})", "prompt", "Token id -1 is out of vocabulary"},
          {R"({"prompt": )" + ids_prompt(60) + R"(, "max_tokens": 10})", "max_tokens",
           "This model's maximum context length is 64 tokens. However, you requested 70 tokens (60 in the messages, "
           "10 in the completion). Please reduce the length of the messages or completion."},
          {R"({"prompt": )" + ids_prompt(64) + "}", "prompt",
           "This model's maximum context length is 64 tokens. However, you requested 64 tokens in the messages. "
           "Please reduce the length of the messages."},
      });
}

TEST_CASE("completions: malformed JSON, wrong types and unknown fields name what is wrong", "[openai]") {
  for (const char* body : {R"({"prompt": )", "", "{\"prompt\": \"a\"} x", "{'prompt': 'a'}"}) {
    INFO(body);
    const ApiError e = parse_error(Endpoint::Completions, body);
    CHECK(e.status == 400);
    CHECK(e.param.empty());
    CHECK_THAT(e.message, Catch::StartsWith("Invalid JSON body: "));
    CHECK(json::parse(error_body(e))["error"]["code"] == nullptr);  // OpenAI: a string or null, never the status
  }
  check_all(
      Endpoint::Completions,
      {
          {"[1, 2]", "", "The request body must be a JSON object, got an array."},
          {std::string(100, '[') + std::string(100, ']'), "", "Invalid JSON body: nesting deeper than 64 levels."},
          {R"({"prompt": "Hi", "temperature": "hot"})", "temperature",
           "Invalid type for 'temperature': expected a number, but got a string instead."},
          {R"({"prompt": "Hi", "max_tokens": 1.5})", "max_tokens",
           "Invalid type for 'max_tokens': expected an integer, but got a decimal instead."},
          {R"({"prompt": "Hi", "n": true})", "n",
           "Invalid type for 'n': expected an integer, but got a boolean instead."},
          {R"({"prompt": "Hi", "stream": "yes"})", "stream",
           "Invalid type for 'stream': expected a boolean, but got a string instead."},
          {R"({"prompt": "Hi", "stop": 5})", "stop",
           "Invalid type for 'stop': expected a string or an array of strings, but got an integer instead."},
          {R"({"prompt": "Hi", "seed": "abc"})", "seed",
           "Invalid type for 'seed': expected an integer, but got a string instead."},
          {R"({"prompt": "Hi", "user": 5})", "user",
           "Invalid type for 'user': expected a string, but got an integer instead."},
          {R"({"prompt": "Hi", "logit_bias": {"5": "up"}})", "logit_bias.5",
           "Invalid type for 'logit_bias.5': expected a number, but got a string instead."},
          {R"({"prompt": {"text": "Hi"}})", "prompt",
           "Invalid type for 'prompt': expected a string or an array, but got an object instead."},
          {R"({"prompt": [1, "a"]})", "prompt",
           "Invalid type for 'prompt': expected a string, an array of strings, an array of token ids or an array of "
           "arrays "
           "of token ids."},
          {R"({"prompt": [1.5]})", "prompt",
           "Invalid type for 'prompt': expected an integer token id, but got a decimal instead."},
          {R"({"prompt": "Hi", "suffix": "end"})", "suffix", "`suffix` is not supported."},
          {R"({"prompt": "Hi", "best_of": 3})", "best_of", "`best_of` is not supported unless it equals `n`."},
          {R"({"prompt": "Hi", "stream_options": {"include_usage": true}})", "stream_options",
           "Stream options can only be defined when `stream=True`."},
          {R"({"prompt": "Hi", "stream": true, "stream_options": {"extra": 1}})", "stream_options.extra",
           "Unrecognized request argument supplied: stream_options.extra"},
      });
}

TEST_CASE("unknown request fields are accepted and reported, or a 400 with --strict-request-fields", "[openai]") {
  // As vLLM: fields OpenAI defines that Parley does not act on pass silently; unknown ones pass and are reported
  // (the server logs and counts them); a known field of the wrong type is still a 400.
  const GenerateRequest c = parse_ok(
      Endpoint::Completions, R"({"prompt": "Hi", "foo": 1, "store": true, "metadata": {"a": "b"}, "messages": []})");
  CHECK(c.ignored_fields == std::vector<std::string>{"foo", "messages"});
  const std::string msgs = R"("messages": [{"role": "user", "content": "Hi"}])";
  const GenerateRequest chat = parse_ok(Endpoint::ChatCompletions, "{" + msgs + R"(, "echo": true, "service_tier":
      "auto", "reasoning_effort": "low", "prompt_cache_key": "k", "bar": [1]})");
  CHECK(chat.ignored_fields == std::vector<std::string>{"bar", "echo"});
  CHECK(parse_ok(Endpoint::ChatCompletions, "{" + msgs + "}").ignored_fields.empty());
  check_error(parse_error(Endpoint::Completions, R"({"prompt": "Hi", "foo": 1, "user": 5})"), 400, "BadRequestError",
              "user", "Invalid type for 'user': expected a string, but got an integer instead.");
  ServingContext strict = context();
  strict.strict_request_fields = true;
  for (const char* body : {R"({"prompt": "Hi", "foo": 1})", R"({"prompt": "Hi", "store": true})"}) {
    CAPTURE(body);
    auto r = parse_generate_request(Endpoint::Completions, body, strict);
    REQUIRE(std::holds_alternative<ApiError>(r));
    const std::string key = std::string(body).find("foo") != std::string::npos ? "foo" : "store";
    check_error(std::get<ApiError>(r), 400, "BadRequestError", key, "Unrecognized request argument supplied: " + key);
  }
}

TEST_CASE("reasoning_effort reaches the chat template unless chat_template_kwargs sets it", "[openai]") {
  const std::string msgs =
      R"("messages": [{"role": "user", "content": "Hi"}], "chat_template": "[{{ reasoning_effort }}]")";
  CHECK(parse_ok(Endpoint::ChatCompletions, "{" + msgs + R"(, "reasoning_effort": "low"})").prompt_texts ==
        std::vector<std::string>{"[low]"});
  CHECK(parse_ok(Endpoint::ChatCompletions,
                 "{" + msgs + R"(, "reasoning_effort": "low", "chat_template_kwargs": {"reasoning_effort": "high"}})")
            .prompt_texts == std::vector<std::string>{"[high]"});
  CHECK(parse_ok(Endpoint::ChatCompletions, "{" + msgs + "}").prompt_texts == std::vector<std::string>{"[]"});
  check_error(parse_error(Endpoint::ChatCompletions, "{" + msgs + R"(, "reasoning_effort": "max"})"), 400,
              "BadRequestError", "reasoning_effort",
              "reasoning_effort must be one of minimal, low, medium, high; got 'max'.");
}

TEST_CASE("an unknown model is a 404 NotFoundError and a missing one is the served model", "[openai]") {
  check_error(parse_error(Endpoint::Completions, R"({"model": "gpt-4", "prompt": "Hi"})"), 404, "NotFoundError",
              "model", "The model `gpt-4` does not exist.", "model_not_found");
  check_error(
      parse_error(Endpoint::ChatCompletions, R"({"model": "x", "messages": [{"role": "user", "content": "Hi"}]})"), 404,
      "NotFoundError", "model", "The model `x` does not exist.", "model_not_found");
  CHECK(parse_ok(Endpoint::Completions, R"({"prompt": "Hi"})").model == "stories260K");
  CHECK(parse_ok(Endpoint::Completions, R"({"model": null, "prompt": "Hi"})").model == "stories260K");
  CHECK(parse_ok(Endpoint::Completions, R"({"model": "stories260K", "prompt": "Hi"})").model == "stories260K");
}

TEST_CASE("completions: every prompt form becomes the expected token ids", "[openai]") {
  const Tokenizer& tok = tok512();
  SECTION("a string is encoded with BOS; add_special_tokens false drops it") {
    const GenerateRequest r = parse_ok(Endpoint::Completions, R"({"prompt": "Lily was happy"})");
    REQUIRE(r.prompts.size() == 1);
    CHECK(r.prompts[0] == tok.encode("Lily was happy", true));
    CHECK(r.prompts[0].front() == 1);
    CHECK(r.prompt_texts == std::vector<std::string>{"Lily was happy"});
    const GenerateRequest nobos = parse_ok(Endpoint::Completions, R"({"prompt": "Lily", "add_special_tokens": false})");
    CHECK(nobos.prompts[0] == tok.encode("Lily", false));
  }
  SECTION("strings, ids and lists of ids") {
    const GenerateRequest strings = parse_ok(Endpoint::Completions, R"({"prompt": ["Lily", "The day"]})");
    CHECK(strings.prompts == std::vector<std::vector<int>>{tok.encode("Lily", true), tok.encode("The day", true)});
    const GenerateRequest ids = parse_ok(Endpoint::Completions, R"({"prompt": [1, 317, 286]})");
    CHECK(ids.prompts == std::vector<std::vector<int>>{{1, 317, 286}});
    CHECK(ids.prompt_texts == std::vector<std::string>{"Lily was"});  // the space after BOS is dropped
    const GenerateRequest lists = parse_ok(Endpoint::Completions, R"({"prompt": [[317], [265, 328]]})");
    CHECK(lists.prompts == std::vector<std::vector<int>>{{317}, {265, 328}});
    CHECK(lists.prompt_texts == std::vector<std::string>{" Lily", " the day"});
  }
}

TEST_CASE("completions: every sampling field lands in SamplingParams", "[openai]") {
  const GenerateRequest r = parse_ok(Endpoint::Completions, R"({
      "model": "stories260K", "prompt": "Hi", "n": 2, "best_of": 2, "temperature": 0.7, "top_p": 0.9, "top_k": 40,
      "min_p": 0.05, "presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.1, "seed": 42,
      "max_tokens": 8, "min_tokens": 2, "stop": "xy", "stop_token_ids": [2], "include_stop_str_in_output": true,
      "ignore_eos": true, "logit_bias": {"5": 2.5, "3": -200}, "logprobs": 3, "user": "u-1", "stream": true,
      "stream_options": {"include_usage": true}, "suffix": ""})");
  const SamplingParams& p = r.params;
  CHECK(p.n == 2);
  CHECK(p.temperature == 0.7f);
  CHECK(p.top_p == 0.9f);
  CHECK(p.top_k == 40);
  CHECK(p.min_p == 0.05f);
  CHECK(p.presence_penalty == 0.5f);
  CHECK(p.frequency_penalty == -0.5f);
  CHECK(p.repetition_penalty == 1.1f);
  CHECK(p.seed == std::optional<uint64_t>(42));
  CHECK(p.max_tokens == 8);
  CHECK(p.min_tokens == 2);
  CHECK(p.stop == std::vector<std::string>{"xy"});
  CHECK(p.stop_token_ids == std::vector<int>{2});
  CHECK(p.include_stop_str_in_output);
  CHECK(p.ignore_eos);
  CHECK(p.logit_bias == std::vector<std::pair<int, float>>{{3, -100.0f}, {5, 2.5f}});  // sorted, clamped as vLLM
  CHECK(p.logprobs == std::optional<int>(3));
  CHECK(r.top_logprobs == 3);
  CHECK(r.stream);
  CHECK(r.include_usage);
  CHECK_FALSE(r.echo);
  CHECK(r.endpoint == Endpoint::Completions);
}

TEST_CASE("completions: defaults as vLLM's CompletionRequest", "[openai]") {
  const GenerateRequest r = parse_ok(Endpoint::Completions, R"({"prompt": "Hi", "echo": true, "stream": true})");
  CHECK(r.params.n == 1);
  CHECK(r.params.temperature == 1.0f);
  CHECK(r.params.top_p == 1.0f);
  CHECK(r.params.top_k == -1);
  CHECK(r.params.max_tokens == 16);
  CHECK_FALSE(r.params.seed);
  CHECK_FALSE(r.params.logprobs);
  CHECK(r.top_logprobs == -1);
  CHECK(r.echo);
  CHECK_FALSE(r.include_usage);
  // null is "not given" for every optional field.
  const GenerateRequest nulls = parse_ok(Endpoint::Completions, R"({"prompt": "Hi", "temperature": null, "stop": null,
      "logit_bias": null, "suffix": null, "best_of": null, "seed": null, "stream_options": null, "user": null})");
  CHECK(nulls.params.temperature == 1.0f);
  CHECK(nulls.params.stop.empty());
  // The default max_tokens shrinks to what the context leaves (64 - 60).
  CHECK(parse_ok(Endpoint::Completions, R"({"prompt": )" + ids_prompt(60) + "}").params.max_tokens == 4);
  CHECK(
      parse_ok(Endpoint::Completions, R"({"prompt": )" + ids_prompt(60) + R"(, "max_tokens": 4})").params.max_tokens ==
      4);
}

TEST_CASE("chat: messages are rendered by the template and tokenized with the BOS it writes", "[openai]") {
  const Tokenizer& tok = tok512();
  const GenerateRequest r = parse_ok(Endpoint::ChatCompletions,
                                     R"({"messages": [{"role": "developer", "content": "Be kind."},
                                                      {"role": "user", "content": [
                                                          {"type": "text", "text": "Lily"},
                                                          {"type": "text", "text": "was"}]}]})");
  // No template: the fallback transcript, after BOS's text (the tokenizer turns it into the BOS token).
  const std::string text = "<s>System: Be kind.\nUser: Lily\nwas\nAssistant:";
  CHECK(r.prompt_texts == std::vector<std::string>{text});
  CHECK(r.prompts == std::vector<std::vector<int>>{tok.encode(text, false)});
  CHECK(r.prompts[0] == tok.encode("System: Be kind.\nUser: Lily\nwas\nAssistant:", true));
  CHECK(r.params.max_tokens == 64 - int(r.prompts[0].size()));  // chat default: what the context leaves
  CHECK(r.top_logprobs == -1);
  // add_special_tokens adds BOS again, as vLLM does.
  CHECK(parse_ok(Endpoint::ChatCompletions,
                 R"({"messages": [{"role": "user", "content": "Hi"}], "add_special_tokens": true})")
            .prompts[0][1] == tok.bos_id());

  ServingContext chatml = context();
  chatml.chat_template = make_chat_template(
      "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
      tok);
  const auto c = parse_generate_request(Endpoint::ChatCompletions, R"({"messages": [{"role": "user", "content": "Hi"}],
                                        "add_generation_prompt": false})",
                                        chatml);
  REQUIRE(std::holds_alternative<GenerateRequest>(c));
  CHECK(std::get<GenerateRequest>(c).prompt_texts[0] == "<|im_start|>user\nHi<|im_end|>\n");
}

TEST_CASE("chat: max_completion_tokens wins over max_tokens and logprobs take top_logprobs", "[openai]") {
  const std::string msgs = R"("messages": [{"role": "user", "content": "Hi"}])";
  CHECK(parse_ok(Endpoint::ChatCompletions, "{" + msgs + R"(, "max_tokens": 7, "max_completion_tokens": 5})")
            .params.max_tokens == 5);
  CHECK(parse_ok(Endpoint::ChatCompletions, "{" + msgs + R"(, "max_tokens": 7})").params.max_tokens == 7);
  const GenerateRequest lp =
      parse_ok(Endpoint::ChatCompletions, "{" + msgs + R"(, "logprobs": true, "top_logprobs": 2})");
  CHECK(lp.params.logprobs == std::optional<int>(2));
  CHECK(lp.top_logprobs == 2);
  CHECK(parse_ok(Endpoint::ChatCompletions, "{" + msgs + R"(, "logprobs": true})").top_logprobs == 0);
  CHECK(parse_ok(Endpoint::ChatCompletions, "{" + msgs + R"(, "top_logprobs": 0})").top_logprobs == -1);
  CHECK(parse_ok(Endpoint::ChatCompletions,
                 "{" + msgs + R"(, "stream": true, "stream_options": {"include_usage": true}})")
            .include_usage);
}

TEST_CASE("chat: invalid messages and chat-only fields give their errors", "[openai]") {
  const std::string msgs = R"("messages": [{"role": "user", "content": "Hi"}])";
  check_all(
      Endpoint::ChatCompletions,
      {
          {"{}", "messages", "Missing required parameter: 'messages'."},
          {R"({"messages": "Hi"})", "messages",
           "Invalid type for 'messages': expected an array, but got a string instead."},
          {R"({"messages": []})", "messages",
           "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead."},
          {R"({"messages": [{"role": "robot", "content": "x"}]})", "messages[0].role",
           "Invalid value for 'messages[0].role': 'robot' is not supported; expected 'system', 'developer', 'user', "
           "'assistant' or 'tool'."},
          {R"({"messages": [{"role": "tool", "content": "x"}]})", "messages[0].tool_call_id",
           "Missing required parameter: 'messages[0].tool_call_id'."},
          {R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})", "messages[0].tool_calls",
           "'messages[0].tool_calls' is only allowed on assistant messages."},
          {R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f"}}]}]})",
           "messages[0].tool_calls[0].function.arguments",
           "Missing required parameter: 'messages[0].tool_calls[0].function.arguments'."},
          {R"({"messages": [{"content": "x"}]})", "messages[0].role",
           "Missing required parameter: 'messages[0].role'."},
          {R"({"messages": [{"role": "user"}]})", "messages[0].content",
           "Missing required parameter: 'messages[0].content'."},
          {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content",
           "Invalid type for 'messages[0].content': expected a string or an array of content parts, but got an integer "
           "instead."},
          {R"({"messages": [{"role": "user", "content": "a", "nick": "bob"}]})", "messages[0].nick",
           "Unrecognized request argument supplied: messages[0].nick"},
          {R"({"messages": [{"role": "user", "content": "a"}], "chat_template_kwargs": 1})", "chat_template_kwargs",
           "Invalid type for 'chat_template_kwargs': expected an object, but got an integer instead."},
          {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]})",
           "messages[0].content[0].image_url",
           "Unrecognized request argument supplied: messages[0].content[0].image_url"},
          {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content[0].type",
           "Invalid value for 'messages[0].content[0].type': content parts of type \"image_url\" are not supported; "
           "only "
           "\"text\" is."},
          {"{" + msgs + R"(, "top_logprobs": 3})", "top_logprobs",
           "when using `top_logprobs`, `logprobs` must be set to true."},
          {"{" + msgs + R"(, "logprobs": true, "top_logprobs": 21})", "top_logprobs",
           "Requested sample logprobs of 21, which is greater than max allowed: 20"},
          {"{" + msgs + R"(, "logprobs": true, "top_logprobs": -2})", "top_logprobs",
           "`top_logprobs` must be a positive value or -1."},
          {"{" + msgs + R"(, "logprobs": 1})", "logprobs",
           "Invalid type for 'logprobs': expected a boolean, but got an integer instead."},
          {"{" + msgs + R"(, "max_completion_tokens": 0})", "max_completion_tokens",
           "max_completion_tokens must be at least 1, got 0."},
          {"{" + msgs + R"(, "tool_choice": "required"})", "tool_choice",
           "When using `tool_choice`, `tools` must be set."},
          {"{" + msgs + R"(, "temperature": -1})", "temperature", "temperature must be non-negative, got -1.0."},
      });
  // Over the context: with max_completion_tokens it is named, without it the messages are.
  const std::string hi = std::to_string(tok512().encode("User: Hi\nAssistant:", true).size());
  check_error(parse_error(Endpoint::ChatCompletions, "{" + msgs + R"(, "max_completion_tokens": 100})"), 400,
              "BadRequestError", "max_completion_tokens",
              "This model's maximum context length is 64 tokens. However, you requested " +
                  std::to_string(std::stoi(hi) + 100) + " tokens (" + hi +
                  " in the messages, 100 in the completion). Please reduce the length of the messages or "
                  "completion.");
  const std::string long_text(200, 'x');
  const std::string n = std::to_string(tok512().encode("User: " + long_text + "\nAssistant:", true).size());
  check_error(
      parse_error(Endpoint::ChatCompletions, R"({"messages": [{"role": "user", "content": ")" + long_text + "\"}]}"),
      400, "BadRequestError", "messages",
      "This model's maximum context length is 64 tokens. However, you requested " + n +
          " tokens in the messages. Please reduce the length of the messages.");
}

TEST_CASE("the parsers return an error, never throw, on mangled bodies", "[openai]") {
  const std::vector<std::pair<Endpoint, std::string>> seeds = {
      {Endpoint::Completions, R"({"model": "stories260K", "prompt": [[1, 317], "Lily"], "n": 2, "logit_bias": {"5": 1},
          "stop": ["a"], "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 4, "logprobs": 2})"},
      {Endpoint::ChatCompletions, R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
          "logprobs": true, "top_logprobs": 2, "max_completion_tokens": 3, "seed": -7, "stop_token_ids": [2]})"},
  };
  std::mt19937 rng(1234);
  const std::string alphabet = "[]{}\":,-.0123456789eE truenullfals\\u";
  const ServingContext ctx = context();
  for (int i = 0; i < 3000; ++i) {
    const auto& [ep, seed] = seeds[i % seeds.size()];
    std::string body = seed;
    for (int edits = 1 + int(rng() % 4); edits > 0; --edits) {
      const size_t at = rng() % body.size();
      switch (rng() % 3) {
        case 0:
          body.erase(at, 1 + rng() % 8);
          break;
        case 1:
          body[at] = alphabet[rng() % alphabet.size()];
          break;
        default:
          body.insert(at, 1, alphabet[rng() % alphabet.size()]);
      }
      if (body.empty()) body = "{";
    }
    INFO(body);
    REQUIRE_NOTHROW(parse_generate_request(ep, body, ctx));
    REQUIRE_NOTHROW(tokenize_response(body, ctx));
    REQUIRE_NOTHROW(detokenize_response(body, ctx));
  }
}

TEST_CASE("a response_format's grammar is compiled once, by the parse, and travels with the request", "[openai]") {
  const GenerateRequest req =
      parse_ok(Endpoint::ChatCompletions,
               R"({"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}})");
  REQUIRE(req.params.structured_outputs);
  CHECK(req.params.structured_outputs->kind == StructuredOutputsParams::Kind::JsonObject);
  REQUIRE(req.params.structured_outputs->grammar);
  CHECK(req.params.structured_outputs->grammar->rules().size() > 0);
}
