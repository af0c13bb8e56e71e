// JSON Schema to GBNF (grammar.hpp), for OpenAI's response_format json_schema and vLLM's
// structured_outputs.json. The grammar accepts a subset of the schema's instances, always valid JSON:
// numbers have at most 16 digits per part and exponents below 100 (finite doubles), \u escapes name
// no lone surrogate, whitespace between tokens is bounded (a model must not ramble in spaces),
// properties come in schema order (required ones first), and a property name never repeats.
//
// Supported: type (one or a list), properties, required, additionalProperties, enum, const, anyOf,
// oneOf (as anyOf), allOf of one schema, $ref into the same document (#, #/$defs/.., #/definitions/..,
// recursion included), items, prefixItems, minItems, maxItems, uniqueItems: false, minLength,
// maxLength, pattern (regex_grammar.hpp, anchored on the whole value), format (date, time, date-time,
// uuid, email, ipv4), minimum/maximum/exclusiveMinimum/exclusiveMaximum on integers (exact ranges) and
// on numbers when the bound is an integer. Annotations (title, description, default, examples, ...)
// are ignored. Anything else throws GrammarError naming the keyword and its JSON pointer, as do
// invalid and unsatisfiable schemas.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "engine/structured_output/grammar.hpp"

namespace parley::structured {

// Schemas are read as ordered_json because property order decides the output's key order (a
// nlohmann::json argument converts, but its keys are already sorted).
class JsonSchemaConverter {
 public:
  // Adds the rules for one schema, every rule name starting with `name` (letters, digits and '-'; other
  // characters become '-'), and returns the rule to reference. $refs resolve within `schema`.
  std::string add(const nlohmann::ordered_json& schema, std::string_view name);

  // The whole grammar: `root ::= root_expression`, then every rule added and the shared helpers.
  std::string grammar(std::string_view root_expression) const;

 private:
  std::map<std::string, std::string> rules_;  // name -> body
};

// A grammar for exactly one instance of `schema`.
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema);

// A grammar for any JSON object (OpenAI's response_format json_object).
std::string json_object_gbnf();

}  // namespace parley::structured
