// Parsing /v1/responses bodies (OpenAI's CreateResponse): validated with its field paths, the conversation (the
// previous response's turns, then the input items) translated into the chat completions body, and parsed by the chat
// path; what the Response object echoes kept beside it.
#include <algorithm>
#include <set>

#include "http/openai_fields.hpp"
#include "http/responses_protocol.hpp"

namespace parley::http::detail {
namespace {

// Fields acted on (background, conversation and prompt only in their off values); seed and top_k are vLLM's
// sampling extensions, as on chat completions.
constexpr std::string_view kResponsesFields[] = {"model",
                                                 "input",
                                                 "instructions",
                                                 "tools",
                                                 "tool_choice",
                                                 "parallel_tool_calls",
                                                 "text",
                                                 "reasoning",
                                                 "max_output_tokens",
                                                 "temperature",
                                                 "top_p",
                                                 "top_k",
                                                 "seed",
                                                 "stream",
                                                 "store",
                                                 "previous_response_id",
                                                 "metadata",
                                                 "user",
                                                 "background",
                                                 "conversation",
                                                 "prompt"};
// Fields the Responses API defines that Parley accepts and does not act on.
constexpr std::string_view kResponsesNoOpFields[] = {
    "include",           "truncation",     "service_tier",   "prompt_cache_key", "prompt_cache_retention",
    "safety_identifier", "stream_options", "max_tool_calls", "top_logprobs",     "context_management"};

std::string joined(const std::string& path, std::string_view key) { return path + "." + std::string(key); }

// The conversation as chat messages, item by item.
struct Conversation {
  ojson messages = ojson::array();
  std::set<std::string> call_ids;  // of the function_call items so far: a function_call_output must answer one
  std::string reasoning;           // reasoning items' text, for the next assistant message's reasoning_content
  bool assistant_last = false;     // the last message is the assistant's: a function_call item joins it

  ojson& assistant() {
    if (!assistant_last) {
      messages.push_back({{"role", "assistant"}, {"content", ""}});
      assistant_last = true;
    }
    ojson& message = messages.back();
    if (!reasoning.empty()) message["reasoning_content"] = std::exchange(reasoning, "");
    return message;
  }
  void push(ojson message) {
    messages.push_back(std::move(message));
    assistant_last = false;
  }
};

// A string, or text parts (input_text, output_text; refusal text too) joined by "\n"; other parts are refused.
std::string text_of(const json& content, const std::string& path) {
  if (content.is_string()) return content;
  if (!content.is_array()) fail_at(path, "Input should be a valid string or a list of content parts");
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string part = item_path(path, i);
    if (!content[i].is_object()) fail_at(part, "Input should be a valid content part object");
    const std::string type = string_field(content[i], part, "type");
    const char* key = type == "refusal" ? "refusal" : "text";
    if (type != "input_text" && type != "output_text" && type != "refusal")
      fail_at(joined(part, "type"), "'" + type + "' parts are not supported; 'input_text' and 'output_text' are");
    text += (i ? "\n" : "") + string_field(content[i], part, key);
  }
  return text;
}

void add_message(const json& item, const std::string& path, Conversation& c) {
  const std::string role = string_field(item, path, "role");
  const std::string text = text_of(required_field(item, path, "content"), joined(path, "content"));
  if (role == "assistant") {
    c.assistant_last = false;  // a message item starts an assistant turn of its own
    ojson& message = c.assistant();
    message["content"] = text;
  } else if (role == "user" || role == "system" || role == "developer") {
    c.push({{"role", role == "developer" ? "system" : role}, {"content", text}});
  } else {
    fail_at(joined(path, "role"), "Input should be 'user', 'system', 'developer' or 'assistant'");
  }
}

void add_function_call(const json& item, const std::string& path, Conversation& c) {
  const std::string call_id = string_field(item, path, "call_id"), name = string_field(item, path, "name");
  const std::string arguments = string_field(item, path, "arguments");
  if (!c.call_ids.insert(call_id).second)
    fail_at(joined(path, "call_id"), "'" + call_id + "' is the call_id of an earlier function_call");
  ojson& message = c.assistant();
  if (!message.contains("tool_calls")) message["tool_calls"] = ojson::array();
  message["tool_calls"].push_back(
      {{"id", call_id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}});
}

void add_function_call_output(const json& item, const std::string& path, Conversation& c) {
  const std::string call_id = string_field(item, path, "call_id");
  if (!c.call_ids.count(call_id))
    fail_at(joined(path, "call_id"), "'" + call_id + "' answers no function_call item before it");
  c.push({{"role", "tool"},
          {"tool_call_id", call_id},
          {"content", text_of(required_field(item, path, "output"), joined(path, "output"))}});
}

// Its reasoning_text (or, without any, its summary) goes to the next assistant message; encrypted_content is opaque.
void add_reasoning(const json& item, const std::string& path, Conversation& c) {
  std::string text;
  for (const char* key : {"content", "summary"}) {
    const json* parts = field(item, key);
    if (!parts || !text.empty()) continue;
    if (!parts->is_array()) fail_at(joined(path, key), "Input should be a valid list");
    for (size_t i = 0; i < parts->size(); ++i) {
      if (!(*parts)[i].is_object()) fail_at(item_path(joined(path, key), i), "Input should be a valid dictionary");
      text += string_field((*parts)[i], item_path(joined(path, key), i), "text");
    }
  }
  c.reasoning += text;
}

// An item of the conversation: a message (its type may be left out), a function call, its output, reasoning.
void add_item(const json& item, const std::string& path, Conversation& c) {
  if (!item.is_object()) fail_at(path, "Input should be a valid dictionary");
  const std::string type = field(item, "type") ? string_field(item, path, "type") : "message";
  if (type == "message")
    add_message(item, path, c);
  else if (type == "function_call")
    add_function_call(item, path, c);
  else if (type == "function_call_output")
    add_function_call_output(item, path, c);
  else if (type == "reasoning")
    add_reasoning(item, path, c);
  else
    fail_at(joined(path, "type"), "'" + type +
                                      "' items are not supported; 'message', 'function_call', "
                                      "'function_call_output' and 'reasoning' are");
}

// The request's own input items: a string is one user message.
ojson input_items(const json& body, const ojson& ordered) {
  const json& input = required_field(body, "", "input");
  if (input.is_string()) return ojson::array({{{"type", "message"}, {"role", "user"}, {"content", ordered["input"]}}});
  if (!input.is_array()) fail_at("input", "Input should be a valid string or a list of items");
  if (input.empty()) fail_at("input", "at least one item is required");
  return ordered["input"];
}

// Function tools in the Responses' flat shape; the echo carries each as FunctionTool (strict as given, or null).
ojson translate_tools(const json& tools, const ojson& ordered, ojson& echo) {
  if (!tools.is_array()) fail_at("tools", "Input should be a valid list");
  ojson out = ojson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string path = item_path("tools", i);
    if (!tools[i].is_object()) fail_at(path, "Input should be a valid dictionary");
    const std::string type = string_field(tools[i], path, "type");
    if (type != "function")
      fail_at(joined(path, "type"), "'" + type + "' tools are not supported; only 'function' tools are");
    const ojson& tool = ordered["tools"][i];
    ojson fn = {{"name", string_field(tools[i], path, "name")}};
    if (field(tools[i], "description")) fn["description"] = string_field(tools[i], path, "description");
    const json* parameters = field(tools[i], "parameters");
    if (parameters && !parameters->is_object())
      fail_at(joined(path, "parameters"), "Input should be a valid dictionary");
    fn["parameters"] = parameters ? tool["parameters"] : ojson{{"type", "object"}, {"properties", ojson::object()}};
    const std::optional<bool> strict = get_bool(tools[i], "strict");
    echo.push_back({{"type", "function"},
                    {"name", fn["name"]},
                    {"description", fn.value("description", ojson())},
                    {"parameters", fn["parameters"]},
                    {"strict", strict ? ojson(*strict) : ojson()}});
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

// auto, none, required, or {type: function, name}: chat's tool_choice.
void translate_tool_choice(const json& choice, const ojson& ordered, const json* tools, ojson& chat) {
  const bool any_tools = tools && tools->is_array() && !tools->empty();
  if (choice.is_string()) {
    if (choice != "auto" && choice != "none" && choice != "required")
      fail_at("tool_choice", "Input should be 'auto', 'none', 'required' or {\"type\": \"function\", \"name\": ...}");
    if (choice == "required" && !any_tools) fail_at("tool_choice", "'required' needs tools");
    if (any_tools) chat["tool_choice"] = ordered["tool_choice"];
    return;
  }
  if (!choice.is_object()) fail_at("tool_choice", "Input should be a valid string or dictionary");
  const std::string type = string_field(choice, "tool_choice", "type");
  if (type != "function") fail_at("tool_choice.type", "'" + type + "' is not supported; 'function' (with a name) is");
  const std::string name = string_field(choice, "tool_choice", "name");
  if (!any_tools ||
      std::none_of(tools->begin(), tools->end(), [&](const json& t) { return t.value("name", "") == name; }))
    fail_at("tool_choice.name", "no function named '" + name + "' is in tools");
  chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", name}}}};
}

// text.format: text (free), json_schema (chat's response_format json_schema), json_object.
ojson translate_text(const json& text, const ojson& ordered, ojson& chat) {
  if (!text.is_object()) fail_at("text", "Input should be a valid dictionary");
  const json* format = field(text, "format");
  if (!format) return {{"format", {{"type", "text"}}}};
  if (!format->is_object()) fail_at("text.format", "Input should be a valid dictionary");
  const std::string type = string_field(*format, "text.format", "type");
  const ojson& given = ordered["text"]["format"];
  if (type == "json_object") chat["response_format"] = {{"type", "json_object"}};
  if (type == "text" || type == "json_object") return {{"format", {{"type", type}}}};
  if (type != "json_schema") fail_at("text.format.type", "Input should be 'text', 'json_schema' or 'json_object'");
  const std::string name = string_field(*format, "text.format", "name");
  if (!required_field(*format, "text.format", "schema").is_object())
    fail_at("text.format.schema", "Input should be a valid dictionary");
  ojson schema = {{"name", name}, {"schema", given["schema"]}};
  if (const auto strict = get_bool(*format, "strict")) schema["strict"] = *strict;
  ojson echo = {{"type", "json_schema"}, {"name", name}, {"schema", given["schema"]}};
  if (field(*format, "description")) echo["description"] = schema["description"] = given["description"];
  echo["strict"] = schema.value("strict", ojson());
  chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(schema)}};
  return {{"format", std::move(echo)}};
}

// effort reaches the template as chat's reasoning_effort ("none": thinking off); summary is read, not acted on.
ojson translate_reasoning(const json& reasoning, ojson& chat) {
  if (!reasoning.is_object()) fail_at("reasoning", "Input should be a valid dictionary");
  const auto effort = get_string(reasoning, "effort");
  const auto summary = get_string(reasoning, "summary");
  if (effort == "none") {
    chat["chat_template_kwargs"] = {{"enable_thinking", false}};
  } else if (effort) {
    if (*effort != "minimal" && *effort != "low" && *effort != "medium" && *effort != "high")
      fail_at("reasoning.effort", "Input should be 'none', 'minimal', 'low', 'medium' or 'high'");
    chat["reasoning_effort"] = *effort;
  }
  return {{"effort", effort ? ojson(*effort) : ojson()}, {"summary", summary ? ojson(*summary) : ojson()}};
}

void refuse_unsupported(const json& body) {
  if (get_bool(body, "background").value_or(false))
    fail_at("background", "background responses are not supported; leave it false");
  if (field(body, "conversation"))
    fail_at("conversation", "conversations are not supported; continue a response with previous_response_id");
  if (field(body, "prompt")) fail_at("prompt", "prompt templates are not supported; send input and instructions");
}

}  // namespace

ojson responses_to_chat(std::string_view body, const json& parsed, const ResponseStore* store, ResponsesRequest& out) {
  const ojson ordered = ojson::parse(body);  // parsed once already: valid; keeps the client's key order
  refuse_unsupported(parsed);
  ojson chat = ojson::object();
  ojson echo = ojson::object();
  Conversation conversation;
  const auto instructions = get_string(parsed, "instructions");
  if (instructions) conversation.push({{"role", "system"}, {"content", *instructions}});
  // The previous response's turns come first: its input items and its output (instructions are not carried over).
  const auto previous_id = get_string(parsed, "previous_response_id");
  out.input = ojson::array();
  if (previous_id) {
    const std::shared_ptr<const StoredResponse> previous = store ? store->get(*previous_id) : nullptr;
    if (!previous)
      throw RequestError{ApiError{404, "Previous response with id '" + *previous_id + "' not found.", "NotFoundError",
                                  "previous_response_id", "previous_response_not_found"}};
    out.input = previous->input;
    for (const ojson& item : previous->response["output"]) out.input.push_back(item);
    for (size_t i = 0; i < out.input.size(); ++i)
      add_item(json::parse(out.input[i].dump()), "previous_response_id", conversation);
  }
  const ojson items = input_items(parsed, ordered);
  const json plain = json::parse(items.dump());
  for (size_t i = 0; i < items.size(); ++i) {
    add_item(plain[i], item_path("input", i), conversation);
    out.input.push_back(items[i]);
  }
  chat["messages"] = std::move(conversation.messages);

  const json* tools = field(parsed, "tools");
  ojson tools_echo = ojson::array();
  if (tools) chat["tools"] = translate_tools(*tools, ordered, tools_echo);
  if (const json* choice = field(parsed, "tool_choice")) translate_tool_choice(*choice, ordered, tools, chat);
  if (const auto parallel = get_bool(parsed, "parallel_tool_calls")) chat["parallel_tool_calls"] = *parallel;
  const json* text = field(parsed, "text");
  ojson text_echo = text ? translate_text(*text, ordered, chat) : ojson{{"format", {{"type", "text"}}}};
  const json* reasoning = field(parsed, "reasoning");
  ojson reasoning_echo = reasoning ? translate_reasoning(*reasoning, chat) : ojson();
  if (const json* max = field(parsed, "max_output_tokens")) {
    if (!max->is_number_integer() || max->get<int64_t>() < 1)
      fail_at("max_output_tokens", "Input should be an integer greater than or equal to 1");
    chat["max_tokens"] = *max;
  }
  for (const char* key : {"temperature", "top_p", "top_k", "seed", "stream", "user"})
    if (field(parsed, key)) chat[key] = ordered[key];
  const json* metadata = field(parsed, "metadata");
  if (metadata && !metadata->is_object()) fail_at("metadata", "Input should be a valid dictionary");
  out.store = get_bool(parsed, "store").value_or(true);

  // What the Response object shows of the request (Response's required fields, defaults as OpenAI's).
  echo["instructions"] = instructions ? ojson(*instructions) : ojson();
  echo["max_output_tokens"] = chat.value("max_tokens", ojson());
  echo["max_tool_calls"] = nullptr;
  echo["parallel_tool_calls"] = get_bool(parsed, "parallel_tool_calls").value_or(true);
  echo["previous_response_id"] = previous_id ? ojson(*previous_id) : ojson();
  echo["reasoning"] = std::move(reasoning_echo);
  echo["service_tier"] = "default";
  echo["store"] = out.store;
  echo["temperature"] = get_number(parsed, "temperature").value_or(1.0);
  echo["text"] = std::move(text_echo);
  echo["tool_choice"] = field(parsed, "tool_choice") ? ordered["tool_choice"] : ojson("auto");
  echo["tools"] = std::move(tools_echo);
  echo["top_logprobs"] = 0;
  echo["top_p"] = get_number(parsed, "top_p").value_or(1.0);
  echo["truncation"] = get_string(parsed, "truncation").value_or("disabled");
  if (const auto user = get_string(parsed, "user")) echo["user"] = *user;
  echo["metadata"] = metadata ? ordered["metadata"] : ojson::object();
  out.echo = std::move(echo);
  return chat;
}

}  // namespace parley::http::detail

namespace parley::http {

using namespace detail;

std::variant<GenerateRequest, ApiError> parse_responses_request(std::string_view body, const ServingContext& ctx,
                                                                const ResponseStore* store) {
  auto responses = std::make_shared<ResponsesRequest>();
  auto parsed = parse_as_chat(Endpoint::Responses, body, ctx, kResponsesFields, kResponsesNoOpFields,
                              [&](const json& j) { return responses_to_chat(body, j, store, *responses); });
  if (auto* req = std::get_if<GenerateRequest>(&parsed)) req->responses = std::move(responses);
  return parsed;
}

}  // namespace parley::http
