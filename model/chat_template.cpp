#include "model/chat_template.hpp"

#include "model/jinja/content_format.hpp"

namespace parley {

namespace {

using Json = nlohmann::ordered_json;

// Python's truthiness of a JSON value: vLLM replaces falsy arguments by {}.
bool truthy(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return false;
    case Json::value_t::boolean:
      return j.get<bool>();
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return j.get<double>() != 0;
    case Json::value_t::string:
      return !j.get_ref<const std::string&>().empty();
    case Json::value_t::array:
    case Json::value_t::object:
      return !j.empty();
    default:
      return true;
  }
}

void parse_tool_call_arguments(Json& message) {
  if (message.value("role", Json()) != "assistant" || !message.contains("tool_calls") ||
      !message["tool_calls"].is_array())
    return;
  for (Json& call : message["tool_calls"]) {
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) continue;
    Json& function = call["function"];
    const Json arguments = function.value("arguments", Json());
    if (!truthy(arguments)) {
      function["arguments"] = Json::object();
    } else if (arguments.is_string()) {
      Json parsed = Json::parse(arguments.get<std::string>(), nullptr, /*allow_exceptions=*/false);
      if (!parsed.is_discarded()) function["arguments"] = std::move(parsed);
    }
  }
}

std::string joined_text(const Json& parts) {
  std::string text;
  bool first = true;
  for (const Json& part : parts) {
    if (!part.is_object() || !part.contains("text") || !part["text"].is_string()) continue;
    if (!first) text += "\n";
    text += part["text"].get<std::string>();
    first = false;
  }
  return text;
}

}  // namespace

Json prepare_messages(const Json& messages, bool content_as_parts) {
  Json prepared = messages;
  if (!prepared.is_array()) return prepared;
  for (Json& message : prepared) {
    if (!message.is_object()) continue;
    parse_tool_call_arguments(message);
    // vLLM: null or missing content is empty (no parts), so an assistant turn that only calls tools renders.
    if (!message.contains("content") || message["content"].is_null())
      message["content"] = content_as_parts ? Json::array() : Json("");
    if (!content_as_parts && message.contains("content") && message["content"].is_array())
      message["content"] = joined_text(message["content"]);
  }
  return prepared;
}

ChatTemplate::ChatTemplate(std::string source, std::string bos_token, std::string eos_token, jinja::Options options)
    : source_(std::move(source)),
      bos_token_(std::move(bos_token)),
      eos_token_(std::move(eos_token)),
      template_(source_, std::move(options)),
      takes_content_parts_(jinja::loops_over_message_content(template_.program())) {}

Json ChatTemplate::render_context(const ChatInputs& inputs) const {
  Json context = Json::object();
  context["messages"] = prepare_messages(inputs.messages, takes_content_parts_);
  if (!inputs.tools.is_null()) context["tools"] = inputs.tools;
  context["add_generation_prompt"] = inputs.add_generation_prompt;
  context["bos_token"] = bos_token_;
  context["eos_token"] = eos_token_;
  if (inputs.kwargs.is_object())
    for (const auto& [key, value] : inputs.kwargs.items())
      if (key != "messages" && key != "tools" && key != "add_generation_prompt") context[key] = value;
  return context;
}

std::string ChatTemplate::apply(const ChatInputs& inputs) const { return template_.render(render_context(inputs)); }

}  // namespace parley
