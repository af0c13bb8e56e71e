// Parsing /v1/messages and /v1/messages/count_tokens bodies (Anthropic's MessageCreateParams): validated with
// Anthropic's field paths, translated into the chat completions body, and parsed by the chat path.
#include <algorithm>
#include <set>

#include "http/anthropic_protocol.hpp"
#include "http/chat_prompt.hpp"
#include "http/openai_fields.hpp"

namespace parley::http::detail {
namespace {

// Fields acted on; seed and structured_outputs are vLLM's sampling extensions, as on chat completions.
constexpr std::string_view kMessagesFields[] = {
    "model", "messages", "max_tokens",  "system",   "stop_sequences", "stream", "temperature",        "top_p",
    "top_k", "tools",    "tool_choice", "thinking", "metadata",       "seed",   "structured_outputs", "output_config"};
// Fields Anthropic defines that Parley accepts and does not act on.
constexpr std::string_view kMessagesNoOpFields[] = {
    "service_tier", "container", "mcp_servers",   "context_management", "cache_control",
    "diagnostics",  "speed",     "inference_geo", "user_profile_id",    "workspace_id"};

std::string block_type(const json& block, const std::string& path) {
  if (!block.is_object()) fail_at(path, "Input should be a valid content block object");
  return string_field(block, path, "type");
}

// A string, or text blocks joined by "\n" (one string for every chat template); other blocks are refused.
std::string text_of(const json& content, const std::string& path) {
  if (content.is_string()) return content;
  if (!content.is_array()) fail_at(path, "Input should be a valid string or a list of text blocks");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string type = block_type(content[i], item_path(path, i));
    if (type != "text")
      fail_at(item_path(path, i) + ".type", "'" + type + "' blocks are not supported here; only 'text' is");
    text += (i ? "\n" : "") + string_field(content[i], item_path(path, i), "text");
  }
  return text;
}

struct Translation {
  ojson messages = ojson::array();
  std::set<std::string> tool_use_ids;  // of the assistant messages so far: a tool_result must answer one
};

// tool_result blocks lead (Anthropic's order), each a tool message; the text blocks after them one user message.
void add_user(const json& content, const std::string& path, Translation& t) {
  if (content.is_string()) return t.messages.push_back({{"role", "user"}, {"content", content}});
  if (!content.is_array()) fail_at(path, "Input should be a valid string or a list of content blocks");
  std::string text;
  bool has_text = false;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string bpath = item_path(path, i), type = block_type(content[i], bpath);
    if (type == "text") {
      text += (has_text ? "\n" : "") + string_field(content[i], bpath, "text");
      has_text = true;
    } else if (type == "tool_result") {
      const std::string id = string_field(content[i], bpath, "tool_use_id");
      if (!t.tool_use_ids.count(id))
        fail_at(bpath + ".tool_use_id", "'" + id + "' answers no tool_use block of an earlier assistant message");
      if (const json* is_error = field(content[i], "is_error"); is_error && !is_error->is_boolean())
        fail_at(bpath + ".is_error", "Input should be a valid boolean");
      const json* result = field(content[i], "content");
      t.messages.push_back(
          {{"role", "tool"}, {"tool_call_id", id}, {"content", result ? text_of(*result, bpath + ".content") : ""}});
    } else {
      fail_at(bpath + ".type",
              "'" + type + "' blocks are not supported in user messages; 'text' and 'tool_result' are");
    }
  }
  if (has_text || content.empty()) t.messages.push_back({{"role", "user"}, {"content", text}});
}

// Text blocks become content, tool_use blocks tool_calls (input as JSON text, the client's key order), thinking
// blocks the reasoning_content templates show; redacted thinking is opaque and dropped.
void add_assistant(const json& content, const ojson& ordered, const std::string& path, Translation& t) {
  if (content.is_string()) return t.messages.push_back({{"role", "assistant"}, {"content", content}});
  if (!content.is_array()) fail_at(path, "Input should be a valid string or a list of content blocks");
  ojson message = {{"role", "assistant"}, {"content", ""}};
  std::string text, thinking;
  ojson calls = ojson::array();
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string bpath = item_path(path, i), type = block_type(content[i], bpath);
    if (type == "text") {
      text += string_field(content[i], bpath, "text");
    } else if (type == "tool_use") {
      const std::string id = string_field(content[i], bpath, "id"), name = string_field(content[i], bpath, "name");
      if (!required_field(content[i], bpath, "input").is_object())
        fail_at(bpath + ".input", "Input should be a valid dictionary");
      if (!t.tool_use_ids.insert(id).second) fail_at(bpath + ".id", "'" + id + "' is the id of an earlier tool_use");
      calls.push_back(
          {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", dump(ordered[i]["input"])}}}});
    } else if (type == "thinking") {
      thinking += string_field(content[i], bpath, "thinking");
    } else if (type != "redacted_thinking") {
      fail_at(bpath + ".type", "'" + type +
                                   "' blocks are not supported in assistant messages; 'text', 'tool_use' and "
                                   "'thinking' are");
    }
  }
  message["content"] = text;
  if (!thinking.empty()) message["reasoning_content"] = thinking;
  if (!calls.empty()) message["tool_calls"] = std::move(calls);
  t.messages.push_back(std::move(message));
}

ojson translate_messages(const json& body, const ojson& ordered) {
  const json& messages = required_field(body, "", "messages");
  if (!messages.is_array()) fail_at("messages", "Input should be a valid list");
  if (messages.empty()) fail_at("messages", "at least one message is required");
  Translation t;
  if (const json* system = field(body, "system"))
    t.messages.push_back({{"role", "system"}, {"content", text_of(*system, "system")}});
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string path = item_path("messages", i);
    if (!messages[i].is_object()) fail_at(path, "Input should be a valid dictionary");
    const std::string role = string_field(messages[i], path, "role");
    const json& content = required_field(messages[i], path, "content");
    if (role == "user")
      add_user(content, path + ".content", t);
    else if (role == "assistant")
      add_assistant(content, ordered["messages"][i]["content"], path + ".content", t);
    else if (role == "system")
      t.messages.push_back({{"role", "system"}, {"content", text_of(content, path + ".content")}});
    else
      fail_at(path + ".role", "Input should be 'user', 'assistant' or 'system'");
  }
  if (messages.back()["role"] == "assistant")
    fail_at("messages", "a final assistant message (a prefill to continue) is not supported; end with a user message");
  return std::move(t.messages);
}

// Custom tools only; input_schema is the function's parameters, as the client wrote it.
ojson translate_tools(const json& tools, const ojson& ordered) {
  if (!tools.is_array()) fail_at("tools", "Input should be a valid list");
  ojson out = ojson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string path = item_path("tools", i);
    if (!tools[i].is_object()) fail_at(path, "Input should be a valid dictionary");
    if (const json* type = field(tools[i], "type"); type && *type != "custom")
      fail_at(path + ".type", "server tools (" + type->dump() + ") are not supported; only custom tools are");
    ojson fn = {{"name", string_field(tools[i], path, "name")}};
    if (field(tools[i], "description")) fn["description"] = string_field(tools[i], path, "description");
    if (!required_field(tools[i], path, "input_schema").is_object())
      fail_at(path + ".input_schema", "Input should be a valid dictionary");
    fn["parameters"] = ordered["tools"][i]["input_schema"];
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

// auto, any ("required"), tool (a named function), none; disable_parallel_tool_use is parallel_tool_calls false.
void translate_tool_choice(const json& choice, const json* tools, ojson& chat) {
  if (!choice.is_object()) fail_at("tool_choice", "Input should be a valid dictionary");
  const std::string type = string_field(choice, "tool_choice", "type");
  const bool any_tools = tools && tools->is_array() && !tools->empty();
  if (const auto parallel = get_bool(choice, "disable_parallel_tool_use")) chat["parallel_tool_calls"] = !*parallel;
  if (type == "auto" || type == "none") {
    if (any_tools) chat["tool_choice"] = type;  // Anthropic takes either without tools: nothing to call
  } else if (type == "any" || type == "tool") {
    if (!any_tools) fail_at("tool_choice", "'" + type + "' needs tools");
    if (type == "any") return void(chat["tool_choice"] = "required");
    const std::string name = string_field(choice, "tool_choice", "name");
    if (std::none_of(tools->begin(), tools->end(), [&](const json& t) { return t.value("name", "") == name; }))
      fail_at("tool_choice.name", "no tool named '" + name + "' is in tools");
    chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", name}}}};
  } else {
    fail_at("tool_choice.type", "Input should be 'auto', 'any', 'tool' or 'none'");
  }
}

// enabled (budget_tokens read, not enforced) and adaptive let the template think; disabled tells it not to.
void translate_thinking(const json& thinking, ojson& chat) {
  if (!thinking.is_object()) fail_at("thinking", "Input should be a valid dictionary");
  const std::string type = string_field(thinking, "thinking", "type");
  if (type == "enabled") {
    const json& budget = required_field(thinking, "thinking", "budget_tokens");
    if (!budget.is_number_integer() || budget.get<int64_t>() < 1)
      fail_at("thinking.budget_tokens", "Input should be a positive integer");
  } else if (type != "adaptive" && type != "disabled") {
    fail_at("thinking.type", "Input should be 'enabled', 'adaptive' or 'disabled'");
  }
  chat["chat_template_kwargs"] = {{"enable_thinking", type != "disabled"}};
}

// output_config.format (a JSON schema the text must follow) is the chat request's response_format.
void translate_output_config(const json& config, const ojson& ordered, ojson& chat) {
  if (!config.is_object()) fail_at("output_config", "Input should be a valid dictionary");
  const json* format = field(config, "format");
  if (!format) return;
  if (!format->is_object() || format->value("type", "") != "json_schema" || !field(*format, "schema") ||
      !(*format)["schema"].is_object())
    fail_at("output_config.format", "Input should be {\"type\": \"json_schema\", \"schema\": {...}}");
  chat["response_format"] = {
      {"type", "json_schema"},
      {"json_schema", {{"name", "output"}, {"schema", ordered["output_config"]["format"]["schema"]}}}};
}

void copy_sampling(const json& body, const ojson& ordered, ojson& chat) {
  if (const json* max_tokens = field(body, "max_tokens")) chat["max_tokens"] = *max_tokens;
  if (const json* stop = field(body, "stop_sequences")) {
    if (!stop->is_array() || !std::all_of(stop->begin(), stop->end(), [](const json& s) { return s.is_string(); }))
      fail_at("stop_sequences", "Input should be a valid list of strings");
    chat["stop"] = *stop;
  }
  for (const char* key : {"stream", "temperature", "top_p", "top_k", "seed"})
    if (const json* v = field(body, key)) chat[key] = *v;
  if (field(body, "structured_outputs")) chat["structured_outputs"] = ordered["structured_outputs"];
  if (const json* metadata = field(body, "metadata")) {
    if (!metadata->is_object()) fail_at("metadata", "Input should be a valid dictionary");
    if (const auto user = get_string(*metadata, "user_id")) chat["user"] = *user;  // logged, as OpenAI's user
  }
}

}  // namespace

ojson messages_to_chat(std::string_view body, const json& parsed, bool count_only) {
  const ojson ordered = ojson::parse(body);  // parsed once already: valid; keeps the client's key order
  if (!count_only) required_field(parsed, "", "max_tokens");
  ojson chat = ojson::object();
  chat["messages"] = translate_messages(parsed, ordered);
  const json* tools = field(parsed, "tools");
  if (tools) chat["tools"] = translate_tools(*tools, ordered);
  if (const json* choice = field(parsed, "tool_choice")) translate_tool_choice(*choice, tools, chat);
  if (const json* thinking = field(parsed, "thinking")) translate_thinking(*thinking, chat);
  if (const json* config = field(parsed, "output_config")) translate_output_config(*config, ordered, chat);
  if (!count_only) copy_sampling(parsed, ordered, chat);
  return chat;
}

}  // namespace parley::http::detail

namespace parley::http {

using namespace detail;

bool is_messages_path(std::string_view path) { return path == "/v1/messages" || path.starts_with("/v1/messages/"); }

std::variant<GenerateRequest, ApiError> parse_messages_request(std::string_view body, const ServingContext& ctx) {
  return parse_as_chat(Endpoint::Messages, body, ctx, kMessagesFields, kMessagesNoOpFields,
                       [&](const json& parsed) { return messages_to_chat(body, parsed, false); });
}

std::variant<std::string, ApiError> count_tokens_response(std::string_view body, const ServingContext& ctx) {
  try {
    const json j = parse_object(body);
    checked_fields(j, kMessagesFields, kMessagesNoOpFields, ctx.strict_request_fields);
    check_model(j, ctx);
    const ojson chat = messages_to_chat(body, j, true);
    const std::string chat_body = dump(chat);
    ChatRequest request = read_chat_request(chat_body, json::parse(chat_body));
    if (ctx.tools.exclude_tools_when_tool_choice_none && chat.value("tool_choice", ojson()) == "none")
      request.inputs.tools = nullptr;  // as the generation would render it
    const std::string prompt = render_chat_prompt(request, ctx.chat_template.get(), *ctx.tokenizer);
    return dump({{"input_tokens", ctx.tokenizer->encode(prompt, false).size()}});
  } catch (const RequestError& e) {
    return e.error;
  }
}

}  // namespace parley::http
