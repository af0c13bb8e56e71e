#include "http/structured_request.hpp"

#include <optional>

#include "engine/structured_output/structured_output_manager.hpp"

namespace parley::http::detail {
namespace {

using Kind = StructuredOutputsParams::Kind;

// nullopt for {"type": "text"}, OpenAI's default: no constraint.
std::optional<StructuredOutputsParams> from_response_format(const json& format, const ojson& ordered) {
  if (!format.is_object()) wrong_type("response_format", "an object", format);
  const std::optional<std::string> type = get_string(format, "type");
  if (!type)
    fail("response_format.type is required: one of 'text', 'json_object', 'json_schema'.", "response_format.type");
  for (const auto& [key, value] : format.items())
    if (key != "type" && !(key == "json_schema" && *type == "json_schema"))
      fail("Unrecognized field response_format." + key + " for type '" + *type + "'.", "response_format." + key);
  if (*type == "text") return std::nullopt;
  if (*type == "json_object") return StructuredOutputsParams{Kind::JsonObject, ""};
  if (*type != "json_schema")
    fail("response_format.type must be one of 'text', 'json_object', 'json_schema', got '" + *type + "'.",
         "response_format.type");
  const json* spec = field(format, "json_schema");
  if (!spec) fail("response_format.json_schema is required when type is 'json_schema'.", "response_format.json_schema");
  if (!spec->is_object()) wrong_type("response_format.json_schema", "an object", *spec);
  const std::optional<std::string> name = get_string(*spec, "name");
  if (!name || name->empty() || name->size() > 64 ||
      name->find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos)
    fail("response_format.json_schema.name is required: a-z, A-Z, 0-9, underscores and dashes, at most 64 characters.",
         "response_format.json_schema.name");
  get_string(*spec, "description");
  get_bool(*spec, "strict");  // outputs always follow the schema exactly: strict or not
  for (const auto& [key, value] : spec->items())
    if (key != "name" && key != "description" && key != "strict" && key != "schema")
      fail("Unrecognized field response_format.json_schema." + key + ".", "response_format.json_schema." + key);
  const json* schema = field(*spec, "schema");
  if (!schema)
    return StructuredOutputsParams{Kind::Json, "{}"};  // OpenAI: the schema is optional; without one any JSON value
  if (!schema->is_object() && !schema->is_boolean())
    wrong_type("response_format.json_schema.schema", "an object", *schema);
  return StructuredOutputsParams{Kind::Json, ordered.at("json_schema").at("schema").dump()};
}

StructuredOutputsParams from_structured_outputs(const json& so, const ojson& ordered) {
  if (!so.is_object()) wrong_type("structured_outputs", "an object", so);
  std::optional<StructuredOutputsParams> out;
  auto set = [&](const std::string& key, StructuredOutputsParams params) {
    if (out)
      fail("structured_outputs takes exactly one of 'json', 'regex', 'choice', 'grammar', 'json_object'.",
           "structured_outputs." + key);
    out = std::move(params);
  };
  for (const auto& [key, value] : so.items()) {
    if (value.is_null()) continue;
    const std::string param = "structured_outputs." + key;
    if (key == "json") {
      if (value.is_string())
        set(key, {Kind::Json, value.get<std::string>()});
      else if (value.is_object() || value.is_boolean())
        set(key, {Kind::Json, ordered.at("json").dump()});
      else
        wrong_type(param, "a JSON Schema object or its text", value);
    } else if (key == "regex" || key == "grammar") {
      if (!value.is_string()) wrong_type(param, "a string", value);
      set(key, {key == "regex" ? Kind::Regex : Kind::Grammar, value.get<std::string>()});
    } else if (key == "choice") {
      if (!value.is_array() || value.empty()) wrong_type(param, "a non-empty array of strings", value);
      set(key, {Kind::Choice, value.dump()});
    } else if (key == "json_object") {
      if (!value.is_boolean()) wrong_type(param, "a boolean", value);
      if (value.get<bool>()) set(key, {Kind::JsonObject, ""});
    } else {
      fail("Unrecognized field structured_outputs." + key +
               " (Parley supports json, regex, choice, grammar and json_object).",
           param);
    }
  }
  if (!out)
    fail("structured_outputs needs one of 'json', 'regex', 'choice', 'grammar', 'json_object'.", "structured_outputs");
  return *out;
}

std::string param_of_kind(Kind kind, bool from_response_format) {
  if (from_response_format) return kind == Kind::Json ? "response_format.json_schema.schema" : "response_format";
  switch (kind) {
    case Kind::Json:
      return "structured_outputs.json";
    case Kind::JsonObject:
      return "structured_outputs.json_object";
    case Kind::Regex:
      return "structured_outputs.regex";
    case Kind::Choice:
      return "structured_outputs.choice";
    case Kind::Grammar:
      return "structured_outputs.grammar";
  }
  return "structured_outputs";
}

}  // namespace

void read_structured_outputs(std::string_view raw_body, const json& body, SamplingParams& params) {
  const json* format = field(body, "response_format");
  const json* so = field(body, "structured_outputs");
  if (!format && !so) return;
  const ojson ordered = ojson::parse(raw_body);
  const std::optional<StructuredOutputsParams> from_format =
      format ? from_response_format(*format, ordered.at("response_format")) : std::nullopt;
  if (from_format && so) fail("Give either response_format or structured_outputs, not both.", "structured_outputs");
  if (!from_format && !so) return;  // {"type": "text"}: no constraint
  StructuredOutputsParams constraint =
      from_format ? *from_format : from_structured_outputs(*so, ordered.at("structured_outputs"));
  try {
    constraint.grammar = structured::compile_grammar(constraint);  // checked here, travels to the worker
  } catch (const structured::GrammarError& e) {
    fail(std::string("Invalid ") + (from_format ? "response_format" : "structured_outputs") + ": " + e.what(),
         param_of_kind(constraint.kind, from_format.has_value()));
  }
  if (params.ignore_eos)
    fail("ignore_eos cannot be combined with a structured output: the output ends where its grammar is complete.",
         "ignore_eos");
  params.structured_outputs = constraint;
}

}  // namespace parley::http::detail
