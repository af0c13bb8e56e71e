// The pieces of json_schema_grammar.cpp shared with json_schema_values.cpp: the rule table, shared
// helper rules, errors with a JSON pointer, and the schema visitor.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/structured_output/grammar.hpp"

namespace parley::structured::json_schema {

using Json = nlohmann::ordered_json;
using Rules = std::map<std::string, std::string>;

// A schema no instance satisfies; an anyOf drops such a branch instead of failing.
struct Unsatisfiable : GrammarError {
  using GrammarError::GrammarError;
};

[[noreturn]] void unsupported_keyword(std::string_view keyword, std::string_view pointer);
[[noreturn]] void invalid(std::string_view keyword, std::string_view pointer, std::string_view why);
[[noreturn]] void unsatisfiable(std::string_view pointer, std::string_view why);

// Adds `body` under `wanted` (sanitized), or under `wanted-N` when that name is a helper's or already
// holds another body. Returns the name used.
std::string add_rule(Rules& rules, std::string_view wanted, const std::string& body);

// Defines a shared helper (space, char, string, number, integer, boolean, null, value, object, array,
// and the string formats) and what it uses; returns its name. Throws std::out_of_range for others.
std::string add_helper(Rules& rules, std::string_view name);
bool is_helper(std::string_view name);

// Digits (with a leading "-" for negatives, no leading zeros, no "-0") for every integer in [min, max];
// a missing bound is open, up to 16 digits or the other bound's length.
std::string integer_range_expression(std::optional<int64_t> min, std::optional<int64_t> max);

// A JSON string (quotes included, no trailing space) that is none of `names`.
std::string string_other_than(const std::vector<std::string>& names);

std::string json_pointer_append(std::string_view pointer, std::string_view token);

class SchemaVisitor {
 public:
  // `prefix` starts every rule name (a sanitized, non-empty name).
  SchemaVisitor(Rules& rules, const Json& document, std::string prefix)
      : rules_(rules), document_(document), prefix_(std::move(prefix)) {}

  // The whole document; returns the rule to reference.
  std::string visit_root() { return visit_named(document_, prefix_, "", "#"); }

 private:
  // Each returns the name of a rule matching the schema's instances followed by optional whitespace.
  std::string visit(const Json& schema, const std::string& name, const std::string& pointer);
  std::string visit_named(const Json& schema, const std::string& base, const std::string& ref_key,
                          const std::string& pointer);
  // add_rule, but the rule reserved for the $ref target being built takes its body here.
  std::string add(std::string_view wanted, const std::string& body);
  std::string visit_ref(const Json& schema, const std::string& name, const std::string& pointer);
  std::string visit_any_of(const Json& branches, const std::string& name, const std::string& pointer);
  std::string visit_literals(const Json& schema, const std::string& name, const std::string& pointer);
  std::string visit_types(const Json& schema, const std::string& name, const std::string& pointer);
  std::string object_rule(const Json& schema, const std::string& name, const std::string& pointer);
  std::string array_rule(const Json& schema, const std::string& name, const std::string& pointer);
  // json_schema_values.cpp
  std::string string_rule(const Json& schema, const std::string& name, const std::string& pointer);
  std::string integer_rule(const Json& schema, const std::string& name, const std::string& pointer);
  std::string number_rule(const Json& schema, const std::string& name, const std::string& pointer);

  Rules& rules_;
  const Json& document_;
  std::string prefix_;
  std::map<std::string, std::string> ref_rules_;  // JSON pointer -> rule name, so recursion terminates
  std::vector<std::string> building_refs_;        // reserved names of the $ref targets being built, innermost last
  std::set<std::string> referenced_;              // reserved names that a $ref used before their body was built
};

}  // namespace parley::structured::json_schema
