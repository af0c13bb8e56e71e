// Parsing /v1/completions and /v1/chat/completions bodies (vLLM's CompletionRequest and
// ChatCompletionRequest in vllm/entrypoints/openai/protocol.py), with vLLM's messages.
#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "engine/structured_output/structured_output_manager.hpp"
#include "http/chat_prompt.hpp"
#include "http/openai_fields.hpp"
#include "http/structured_request.hpp"

namespace parley::http {
namespace {

using namespace detail;

// Fields we honour besides the sampling fields read by type (kSamplingFields); "user" (OpenAI's end-user id, for abuse
// monitoring) goes into the request log line.
constexpr std::string_view kCompletionFields[] = {"model",
                                                  "prompt",
                                                  "echo",
                                                  "logit_bias",
                                                  "logprobs",
                                                  "max_tokens",
                                                  "stop",
                                                  "stream",
                                                  "stream_options",
                                                  "suffix",
                                                  "user",
                                                  "best_of",
                                                  "stop_token_ids",
                                                  "add_special_tokens",
                                                  "prompt_logprobs",
                                                  "response_format",
                                                  "structured_outputs"};
constexpr std::string_view kChatFields[] = {"model",
                                            "messages",
                                            "logit_bias",
                                            "logprobs",
                                            "top_logprobs",
                                            "max_tokens",
                                            "max_completion_tokens",
                                            "stop",
                                            "stream",
                                            "stream_options",
                                            "user",
                                            "stop_token_ids",
                                            "add_generation_prompt",
                                            "add_special_tokens",
                                            "chat_template",
                                            "chat_template_kwargs",
                                            "reasoning_effort",
                                            "tools",
                                            "tool_choice",
                                            "parallel_tool_calls",
                                            "prompt_logprobs",
                                            "response_format",
                                            "structured_outputs"};

// An endpoint's fields and the sampling fields it reads by type: those not listed are unknown.
std::span<const std::string_view> request_fields(bool chat) {
  auto with_sampling_fields = [](std::span<const std::string_view> own) {
    std::vector<std::string_view> fields(own.begin(), own.end());
    for_each_sampling_field([&](const auto& field) {
      if (field.from_request == FromRequest::ByType) fields.push_back(field.name);
    });
    return fields;
  };
  static const std::vector<std::string_view> completion = with_sampling_fields(kCompletionFields);
  static const std::vector<std::string_view> chat_fields = with_sampling_fields(kChatFields);
  return chat ? chat_fields : completion;
}

constexpr int kDefaultCompletionMaxTokens = 16;  // OpenAI's and vLLM's CompletionRequest default

void check_stream_options(const json& body, GenerateRequest& req) {
  req.stream = get_bool(body, "stream").value_or(false);
  const json* opts = field(body, "stream_options");
  if (!opts) return;
  if (!opts->is_object()) wrong_type("stream_options", "an object", *opts);
  if (!opts->empty() && !req.stream) fail("Stream options can only be defined when `stream=True`.", "stream_options");
  for (const auto& [key, value] : opts->items()) {
    if (key == "include_usage") continue;
    if (key == "continuous_usage_stats" && (value.is_null() || value == false)) continue;
    fail(key == "continuous_usage_stats" ? "`stream_options.continuous_usage_stats` is not supported."
                                         : "Unrecognized request argument supplied: stream_options." + key,
         "stream_options." + key);
  }
  req.include_usage = get_bool(*opts, "include_usage").value_or(false);
}

std::vector<std::string> read_stop(const json& body) {
  const json* stop = field(body, "stop");
  if (!stop) return {};
  std::vector<std::string> out;
  if (stop->is_string())
    out.push_back(stop->get<std::string>());
  else if (stop->is_array() && std::all_of(stop->begin(), stop->end(), [](const json& s) { return s.is_string(); }))
    out = stop->get<std::vector<std::string>>();
  else
    wrong_type("stop", "a string or an array of strings", *stop);
  for (const auto& s : out)
    if (s.empty()) fail("stop cannot contain an empty string.", "stop");
  return out;
}

std::vector<std::pair<int, float>> read_logit_bias(const json& body, int vocab) {
  const json* bias = field(body, "logit_bias");
  if (!bias) return {};
  if (!bias->is_object()) wrong_type("logit_bias", "an object", *bias);
  std::vector<std::pair<int, float>> out;
  for (const auto& [key, value] : bias->items()) {
    int id = -1;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size())
      fail("Found token_id `" + key +
               "` in logit_bias but token_id must be an integer or string representing an integer",
           "logit_bias");
    if (id < 0 || id >= vocab)
      fail("token_id(s) [" + std::to_string(id) +
               "] in logit_bias contain out-of-vocab token ids. Vocabulary size: " + std::to_string(vocab),
           "logit_bias");
    if (!value.is_number()) wrong_type("logit_bias." + key, "a number", value);
    // vLLM clamps each bias into [-100, 100], OpenAI's documented range.
    out.emplace_back(id, static_cast<float>(std::clamp(value.get<double>(), -100.0, 100.0)));
  }
  std::sort(out.begin(), out.end());
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i].first == out[i - 1].first)
      fail("logit_bias has token id " + std::to_string(out[i].first) + " more than once.", "logit_bias");
  return out;
}

// A field read by its type (FromRequest::ByType); absent or null keeps SamplingParams' default.
void read_by_type(const json& body, std::string_view key, int& value) { value = get_int32(body, key).value_or(value); }
void read_by_type(const json& body, std::string_view key, bool& value) { value = get_bool(body, key).value_or(value); }
void read_by_type(const json& body, std::string_view key, float& value) {
  if (const auto number = get_number(body, key)) value = static_cast<float>(*number);
}
void read_by_type(const json& body, std::string_view key, std::optional<uint64_t>& value) {
  if (const auto number = get_int(body, key)) value = static_cast<uint64_t>(*number);  // negative seeds wrap
}
template <class Field>
concept ReadByType = requires(const json& body, typename Field::Type& value) {
  read_by_type(body, "", value);
};
// Every field the table reads by type has a reader for that type.
consteval bool by_type_fields_readable() {
  bool readable = true;
  for_each_sampling_field([&](const auto& field) {
    readable =
        readable && (field.from_request != FromRequest::ByType || ReadByType<std::remove_cvref_t<decltype(field)>>);
  });
  return readable;
}
static_assert(by_type_fields_readable(), "a field marked FromRequest::ByType has a type read_by_type does not read");

// Sampling fields shared by both endpoints, defaults as vLLM's _DEFAULT_SAMPLING_PARAMS.
void read_sampling(const json& body, int vocab, SamplingParams& p) {
  for_each_sampling_field([&](const auto& field) {
    if constexpr (ReadByType<std::remove_cvref_t<decltype(field)>>)
      if (field.from_request == FromRequest::ByType) read_by_type(body, field.name, p.*field.member);
  });
  p.stop = read_stop(body);
  if (const json* ids = field(body, "stop_token_ids")) p.stop_token_ids = token_ids(*ids, vocab, "stop_token_ids");
  p.logit_bias = read_logit_bias(body, vocab);
}

// vLLM's SamplingParams._verify_args ranges and words, checked here to name the field; validate()
// stays the engine's own guard.
void check_ranges(const json& body, const SamplingParams& p, int max_n) {
  if (p.n > max_n)  // before the table's checks: n is its first, and a valid n passes it
    fail("n must be at most " + std::to_string(max_n) + " (--max-n), got " + std::to_string(p.n) + ".", "n");
  for_each_out_of_range(p, false, [&](const auto& field, auto value) {
    if (field.from_request != FromRequest::ByType) return;  // checked where the endpoint reads it
    const std::string param(field.name);
    if constexpr (std::is_floating_point_v<decltype(value)>)
      fail(field.range.message(param, py_float(get_number(body, param).value_or(0.0))), param);
    else
      fail(field.range.message(param, std::to_string(value)), param);
  });
}

void read_logprobs(const json& body, Endpoint ep, int vocab, GenerateRequest& req) {
  std::optional<int> n;
  const char* param = "logprobs";
  if (ep == Endpoint::Completions) {
    n = get_int32(body, "logprobs");
    if (n && *n < 0) fail("`logprobs` must be a positive value.", "logprobs");
  } else {
    const bool on = get_bool(body, "logprobs").value_or(false);
    const int top = get_int32(body, "top_logprobs").value_or(0);
    param = "top_logprobs";
    if (top < -1) fail("`top_logprobs` must be a positive value or -1.", param);
    if (top != 0 && !on) fail("when using `top_logprobs`, `logprobs` must be set to true.", param);
    if (on) n = top == -1 ? vocab : top;
  }
  if (n && *n > kMaxLogprobs)
    fail("Requested sample logprobs of " + std::to_string(*n) +
             ", which is greater than max allowed: " + std::to_string(kMaxLogprobs),
         param);
  req.params.logprobs = n;
  req.top_logprobs = n.value_or(-1);
}

// vLLM's prompt_logprobs (both endpoints). Completions' echo with logprobs scores the prompt too: the engine
// computes the larger of the two counts, each response part shows its own.
void read_prompt_logprobs(const json& body, GenerateRequest& req) {
  const std::optional<int> n = get_int32(body, "prompt_logprobs");
  if (n && *n < 0)
    fail("`prompt_logprobs` must be a non-negative integer, got " + std::to_string(*n) + ".", "prompt_logprobs");
  if (n && *n > kMaxLogprobs)
    fail("Requested prompt logprobs of " + std::to_string(*n) +
             ", which is greater than max allowed: " + std::to_string(kMaxLogprobs),
         "prompt_logprobs");
  req.prompt_logprobs = n.value_or(-1);
  const int echoed = req.echo ? req.top_logprobs : -1;
  if (std::max(req.prompt_logprobs, echoed) >= 0) req.params.prompt_logprobs = std::max(req.prompt_logprobs, echoed);
}

// max_tokens (or chat's max_completion_tokens) against the context, as vLLM's _validate_input.
void resolve_max_tokens(const json& body, const ServingContext& ctx, GenerateRequest& req) {
  const bool chat = req.endpoint == Endpoint::ChatCompletions;
  const bool completion_tokens = chat && field(body, "max_completion_tokens");
  const std::string param = completion_tokens ? "max_completion_tokens" : "max_tokens";
  const std::optional<int> asked = get_int32(body, param);
  if (asked && *asked < 1) fail(param + " must be at least 1, got " + std::to_string(*asked) + ".", param);
  const long long max_len = ctx.max_model_len;
  long long longest = 0;
  for (const auto& p : req.prompts) {
    const long long len = static_cast<long long>(p.size());
    longest = std::max(longest, len);
    const std::string head =
        "This model's maximum context length is " + std::to_string(max_len) + " tokens. However, you requested ";
    if (!asked && len >= max_len)
      fail(head + std::to_string(len) + " tokens in the messages. Please reduce the length of the messages.",
           chat ? "messages" : "prompt");
    if (asked && len + *asked > max_len)
      fail(head + std::to_string(len + *asked) + " tokens (" + std::to_string(len) + " in the messages, " +
               std::to_string(*asked) + " in the completion). Please reduce the length of the messages or completion.",
           param);
  }
  const long long room = max_len - longest;
  req.params.max_tokens = static_cast<int>(asked  ? *asked
                                           : chat ? room
                                                  : std::min<long long>(kDefaultCompletionMaxTokens, room));
  if (req.params.min_tokens > req.params.max_tokens)
    fail("min_tokens must be less than or equal to max_tokens=" + std::to_string(req.params.max_tokens) + ", got " +
             std::to_string(req.params.min_tokens) + ".",
         "min_tokens");
}

// Completion fields OpenAI defines that Parley cannot honour: refused unless they change nothing.
void reject_unsupported(const json& body, const GenerateRequest& req) {
  if (auto suffix = get_string(body, "suffix"); suffix && !suffix->empty())
    fail("`suffix` is not supported.", "suffix");
  if (auto best_of = get_int32(body, "best_of"); best_of && *best_of != req.params.n)
    fail("`best_of` is not supported unless it equals `n`.", "best_of");
}

// tool_choice and its kin: how the output is read for calls, and the constraint `required` and a named
// function put on it (returned: it is set after response_format and structured_outputs are read).
std::optional<StructuredOutputsParams> read_tools(const json& body, const ServingContext& ctx, ChatRequest& chat,
                                                  GenerateRequest& req) {
  const std::string_view source = chat.chat_template  ? std::string_view(*chat.chat_template)
                                  : ctx.chat_template ? std::string_view(ctx.chat_template->source())
                                                      : std::string_view();
  ToolRequest tools = read_tool_request(body, ctx.tools, source);
  if (!tools.render_tools) chat.inputs.tools = nullptr;  // --exclude-tools-when-tool-choice-none
  req.reasoning = ctx.reasoning_parser;                  // chat only: completions are raw text
  // Harmony's channels are special tokens: the parser reads them as text and drops them.
  if (req.reasoning == ReasoningParser::GptOss) req.params.skip_special_tokens = false;
  if (!tools.calling) return std::nullopt;
  req.tool_calling = tools.calling;
  // vLLM's hermes and mistral parsers: their markers are special tokens in some vocabularies, kept in the text.
  if (tools.calling->parser != ToolCallParser::Llama3Json) req.params.skip_special_tokens = false;
  if (tools.calling->choice != ToolChoice::Required && tools.calling->choice != ToolChoice::Named) return std::nullopt;
  try {
    StructuredOutputsParams constraint{StructuredOutputsParams::Kind::Grammar,
                                       tool_call_grammar(*tools.calling, chat.inputs.tools)};
    constraint.grammar = structured::compile_grammar(constraint);  // checked before it queues, run by the worker
    return constraint;
  } catch (const ToolGrammarError& e) {
    fail(e.what(), e.param);
  } catch (const structured::GrammarError& e) {
    fail(std::string("tool_choice cannot be honoured: ") + e.what(), "tool_choice");
  }
}

void constrain_to_tool_calls(const std::optional<StructuredOutputsParams>& constraint, SamplingParams& params) {
  if (!constraint) return;
  if (params.structured_outputs)  // vLLM lets tool_choice override them silently; Parley refuses
    fail(
        "tool_choice \"required\" or a named function constrains the output to tool calls: it cannot be combined "
        "with response_format or structured_outputs.",
        "tool_choice");
  if (params.ignore_eos)
    fail(
        "ignore_eos cannot be combined with tool_choice \"required\" or a named function: the output ends where its "
        "calls are complete.",
        "ignore_eos");
  params.structured_outputs = constraint;
}

// The field a SamplingParams::validate() message is about: its first word, when that is a field.
std::string param_of(const std::string& message, const GenerateRequest& req, const json& body) {
  const std::string word = message.substr(0, message.find_first_not_of("abcdefghijklmnopqrstuvwxyz_"));
  const bool chat = req.endpoint == Endpoint::ChatCompletions;
  if (word == "logprobs" && chat) return "top_logprobs";
  if (word == "max_tokens" && chat && field(body, "max_completion_tokens")) return "max_completion_tokens";
  const auto fields = request_fields(chat);
  return std::find(fields.begin(), fields.end(), word) != fields.end() ? word : "";
}

// As vLLM: fields the API defines and Parley does not act on are accepted, unknown ones accepted and reported
// (the server logs and counts them); strict, every field outside Parley's own list is a 400.
std::vector<std::string> checked_unknown_fields(const json& j, bool chat, bool strict) {
  std::vector<std::string> ignored;
  for (std::string& key : unknown_fields(j, request_fields(chat))) {
    if (strict) fail("Unrecognized request argument supplied: " + key, key);
    if (std::find(std::begin(kAcceptedNoOpFields), std::end(kAcceptedNoOpFields), key) == std::end(kAcceptedNoOpFields))
      ignored.push_back(std::move(key));
  }
  return ignored;
}

}  // namespace

// Completions' prompt and embeddings' input: a string, strings, token ids, or lists of token ids; each tokenized or
// checked.
void detail::read_prompts(const json& body, const ServingContext& ctx, GenerateRequest& req, const std::string& param) {
  const Tokenizer& tok = *ctx.tokenizer;
  const int vocab = tok.vocab().size();
  const bool add_special = get_bool(body, "add_special_tokens").value_or(true);  // BOS/EOS as the vocabulary says
  auto empty = [&] { fail("The " + param + " cannot be empty.", param); };
  auto add_text = [&](const std::string& text) {
    if (text.empty()) empty();
    req.prompts.push_back(tok.encode(text, add_special));
    req.prompt_texts.push_back(text);
  };
  auto add_ids = [&](const json& ids) {
    req.prompts.push_back(token_ids(ids, vocab, param));
    if (req.prompts.back().empty()) empty();
    req.prompt_texts.push_back(tok.decode(req.prompts.back()));
  };
  const json* prompt = field(body, param);
  if (!prompt) empty();
  auto all = [&](auto pred) { return std::all_of(prompt->begin(), prompt->end(), pred); };
  if (prompt->is_string())
    add_text(prompt->get<std::string>());
  else if (!prompt->is_array())
    wrong_type(param, "a string or an array", *prompt);
  else if (prompt->empty())
    empty();
  else if (all([](const json& p) { return p.is_string(); }))
    for (const auto& p : *prompt) add_text(p.get<std::string>());
  else if (all([](const json& p) { return p.is_number(); }))
    add_ids(*prompt);
  else if (all([](const json& p) { return p.is_array(); }))
    for (const auto& p : *prompt) add_ids(p);
  else
    fail("Invalid type for '" + param +
             "': expected a string, an array of strings, an array of token ids or an array of arrays of token ids.",
         param);
}

std::variant<GenerateRequest, ApiError> parse_generate_request(Endpoint endpoint, std::string_view body,
                                                               const ServingContext& ctx) {
  try {
    const json j = parse_object(body);
    const bool chat = endpoint == Endpoint::ChatCompletions;
    GenerateRequest req;
    req.ignored_fields = checked_unknown_fields(j, chat, ctx.strict_request_fields);
    check_model(j, ctx);
    const int vocab = ctx.tokenizer->vocab().size();
    req.user = get_string(j, "user").value_or("");  // OpenAI's end-user id: logged with the request
    req.endpoint = endpoint;
    req.model = ctx.model_name;
    check_stream_options(j, req);
    read_sampling(j, vocab, req.params);
    check_ranges(j, req.params, ctx.max_n);
    read_logprobs(j, endpoint, vocab, req);
    std::optional<StructuredOutputsParams> tool_constraint;
    if (chat) {
      ChatRequest chat_request = read_chat_request(body, j);
      tool_constraint = read_tools(j, ctx, chat_request, req);
      const std::string text = render_chat_prompt(chat_request, ctx.chat_template.get(), *ctx.tokenizer);
      // vLLM: the template writes BOS, so chat adds no special tokens unless asked.
      req.prompts.push_back(ctx.tokenizer->encode(text, get_bool(j, "add_special_tokens").value_or(false)));
      req.prompt_texts.push_back(text);
      if (req.reasoning) req.reasoning = parser_for_prompt(*req.reasoning, text);
    } else {
      req.echo = get_bool(j, "echo").value_or(false);
      reject_unsupported(j, req);
      read_prompts(j, ctx, req, "prompt");
    }
    read_prompt_logprobs(j, req);
    read_structured_outputs(body, j, req.params);
    constrain_to_tool_calls(tool_constraint, req.params);
    // Constraints begin where the reasoning ends (vLLM's reasoning-aware structured outputs): thinking stays free.
    // A forced Harmony call is a commentary message, not the final one: it is constrained from the first token.
    const bool harmony_call = tool_constraint && req.reasoning == ReasoningParser::GptOss;
    if (chat && req.reasoning && req.params.structured_outputs && !ctx.structured_outputs_in_reasoning && !harmony_call)
      if (const auto marker = reasoning_end_marker(*req.reasoning, req.prompt_texts.front()))
        req.params.structured_outputs->starts_after = ctx.tokenizer->encode(*marker, false);
    resolve_max_tokens(j, ctx, req);
    try {
      req.params.validate(vocab);
    } catch (const std::invalid_argument& e) {
      fail(e.what(), param_of(e.what(), req, j));
    }
    return req;
  } catch (const RequestError& e) {
    return e.error;
  }
}

namespace detail {

std::variant<GenerateRequest, ApiError> parse_as_chat(Endpoint endpoint, std::string_view body,
                                                      const ServingContext& ctx,
                                                      std::span<const std::string_view> acted,
                                                      std::span<const std::string_view> no_op,
                                                      const std::function<ojson(const json&)>& to_chat) {
  std::vector<std::string> ignored;
  std::string chat_body;
  try {
    const json j = parse_object(body);
    ignored = checked_fields(j, acted, no_op, ctx.strict_request_fields);
    check_model(j, ctx);
    chat_body = dump(to_chat(j));
  } catch (const RequestError& e) {
    return e.error;
  }
  auto parsed = parse_generate_request(Endpoint::ChatCompletions, chat_body, ctx);
  if (auto* req = std::get_if<GenerateRequest>(&parsed)) {
    req->endpoint = endpoint;
    req->ignored_fields = std::move(ignored);
  }
  return parsed;
}

}  // namespace detail
}  // namespace parley::http
