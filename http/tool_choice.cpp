// tool_choice and parallel_tool_calls as vLLM's ChatCompletionRequest.check_tool_usage reads them (its
// messages), the parser a request's calls are read with, and the grammar `required` and named choices use.
#include <algorithm>

#include "engine/structured_output/gbnf_text.hpp"
#include "engine/structured_output/json_schema_grammar.hpp"
#include "http/chat_prompt.hpp"
#include "http/openai_fields.hpp"
#include "http/tool_calls.hpp"

namespace parley::http {
namespace {

constexpr const char* kNamedUsage =
    "Correct usage: `{\"type\": \"function\", \"function\": {\"name\": \"my_function\"}}`";

// A Python-ish rendering of a value in vLLM's messages (strings bare, as f"{value}" prints them).
std::string shown(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

std::string tool_call_grammar(const ToolCalling& calling, const nlohmann::ordered_json& tools) {
  using structured::gbnf_literal;
  structured::JsonSchemaConverter converter;
  // Each call exactly as the template's own example writes it, so the model meets its training format.
  const bool llama = calling.parser == ToolCallParser::Llama3Json, hermes = calling.parser == ToolCallParser::Hermes;
  const bool harmony = calling.parser == ToolCallParser::OpenAi;  // the arguments are the message itself
  const std::string open = hermes ? "<tool_call>\n" : "", close = hermes ? "\n</tool_call>" : "";
  const std::string key = llama ? "parameters" : "arguments";
  std::string one;
  for (size_t i = 0; i < tools.size(); ++i) {
    const nlohmann::ordered_json& fn = tools[i].at("function");
    const std::string name = fn.at("name");
    if (calling.choice == ToolChoice::Named && name != calling.function) continue;
    const auto params = fn.find("parameters");  // OpenAI: a function without parameters takes none
    const nlohmann::ordered_json schema =
        params != fn.end() && params->is_object()
            ? *params
            : nlohmann::ordered_json{{"type", "object"}, {"properties", nlohmann::ordered_json::object()}};
    std::string arguments;
    try {
      arguments = converter.add(schema, "tool-" + std::to_string(i) + "-arguments");
    } catch (const structured::GrammarError& e) {
      const std::string field = "tools[" + std::to_string(i) + "].function.parameters";
      const std::string choice = calling.choice == ToolChoice::Named ? "naming it" : "\"required\"";
      throw ToolGrammarError(field, "Invalid '" + field + "' for tool_choice " + choice + ": " + e.what());
    }
    const std::string head = harmony ? "<|channel|>commentary to=functions." + name + "<|message|>"
                                     : open + "{\"name\": " + nlohmann::json(name).dump() + ", \"" + key + "\": ";
    const std::string tail = harmony ? "<|call|>" : "}" + close;
    one += (one.empty() ? "" : " | ") + gbnf_literal(head) + " " + arguments + " " + gbnf_literal(tail);
    if (calling.choice == ToolChoice::Named) break;
  }
  one = "( " + one + " )";
  const bool many = calling.choice == ToolChoice::Required && calling.parallel_tool_calls;
  const std::string separator = hermes ? "\n" : llama ? "; " : harmony ? "" : ", ";
  const std::string more = separator.empty() ? one : gbnf_literal(separator) + " " + one;
  std::string calls = one + (many ? " ( " + more + " )*" : "");
  if (calling.parser == ToolCallParser::Mistral)
    calls = gbnf_literal("[TOOL_CALLS][") + " " + calls + " " + gbnf_literal("]");
  return converter.grammar(calls);
}

}  // namespace parley::http

namespace parley::http::detail {

ToolRequest read_tool_request(const json& body, const ToolServing& serving, std::string_view template_source) {
  ToolRequest out;
  const json* tools = field(body, "tools");  // checked by read_chat_request
  const json* choice = field(body, "tool_choice");
  const bool parallel = get_bool(body, "parallel_tool_calls").value_or(true);
  const bool none = choice && choice->is_string() && *choice == "none";
  ToolChoice mode = tools && !tools->empty() && !none ? ToolChoice::Auto : ToolChoice::None;
  std::string function;
  if (choice && !none) {
    if (!tools) fail("When using `tool_choice`, `tools` must be set.", "tool_choice");
    if (choice->is_string() && (*choice == "auto" || *choice == "required")) {
      mode = *choice == "auto" ? ToolChoice::Auto : ToolChoice::Required;
    } else if (choice->is_object()) {
      const json* type = field(*choice, "type");
      if (type && *type != "function")
        fail("Invalid value for `tool_choice.type`: " + shown(*type) + "! Only \"function\" is supported.",
             "tool_choice.type");
      const json* fn = field(*choice, "function");
      if (!fn || !fn->is_object())
        fail("Invalid value for `function`: `" + (fn ? shown(*fn) : "None") + "` in `tool_choice`! " + kNamedUsage,
             "tool_choice.function");
      const json* name = field(*fn, "name");
      if (!name)
        fail(std::string("Expected field `name` in `function` in `tool_choice`! ") + kNamedUsage,
             "tool_choice.function.name");
      if (!name->is_string() || name->get_ref<const std::string&>().empty())
        fail("Invalid `name` in `function`: `" + shown(*name) + "` in `tool_choice`! " + kNamedUsage,
             "tool_choice.function.name");
      function = *name;
      const bool known =
          std::any_of(tools->begin(), tools->end(), [&](const json& t) { return t["function"]["name"] == function; });
      if (!known)
        fail("The tool specified in `tool_choice` does not match any of the specified `tools`", "tool_choice");
      mode = ToolChoice::Named;
    } else {
      fail("Invalid value for `tool_choice`: " + shown(*choice) +
               "! Only named tools, \"none\", \"auto\" or \"required\" are supported.",
           "tool_choice");
    }
    if (tools->empty()) mode = ToolChoice::None;  // OpenAI: nothing to call (vLLM: required becomes none)
  }
  out.render_tools = !(none && serving.exclude_tools_when_tool_choice_none);
  if (mode == ToolChoice::None) return out;
  if (mode == ToolChoice::Auto && !serving.enable_auto_tool_choice)
    fail(
        "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set (Parley also "
        "recognises the parser from the chat template).",
        "tool_choice");
  const std::optional<ToolCallParser> parser =
      serving.parser ? serving.parser : detect_tool_call_parser(template_source);
  if (!parser)
    fail(
        "Tool calls need a format: the chat template shows none Parley recognises; start the server with "
        "--tool-call-parser (" +
            known_tool_call_parsers() + ").",
        "tool_choice");
  out.calling = ToolCalling{*parser, mode, function, parallel};
  return out;
}

}  // namespace parley::http::detail
