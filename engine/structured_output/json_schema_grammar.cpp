// The schema visitor's dispatch: keyword checks, $ref, anyOf/oneOf/allOf, enum/const and types.
// Objects and arrays are in json_schema_containers.cpp, strings and numbers beside it.
#include "engine/structured_output/json_schema_grammar.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "engine/structured_output/gbnf_text.hpp"
#include "engine/structured_output/json_schema_internal.hpp"

namespace parley::structured {
namespace json_schema {
namespace {

const std::set<std::string, std::less<>> kAnnotations = {"title", "description", "default",    "examples", "$schema",
                                                         "$id",   "$comment",    "deprecated", "readOnly", "writeOnly",
                                                         "$defs", "definitions"};  // $defs are read only through $ref
const std::set<std::string, std::less<>> kStringKeywords = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string, std::less<>> kNumberKeywords = {"minimum", "maximum", "exclusiveMinimum",
                                                            "exclusiveMaximum"};
const std::set<std::string, std::less<>> kObjectKeywords = {"properties", "required", "additionalProperties"};
const std::set<std::string, std::less<>> kArrayKeywords = {"items", "prefixItems", "minItems", "maxItems",
                                                           "uniqueItems"};
const std::set<std::string, std::less<>> kCombinators = {"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref"};
const char* const kTypes[] = {"string", "integer", "number", "boolean", "null", "object", "array"};

// The placeholder body of a rule reserved for a $ref target that is being converted.
const std::string kPending = "<pending>";

// true, {} and schemas of annotations only.
bool accepts_everything(const Json& schema) {
  if (schema.is_boolean()) return schema.get<bool>();
  if (!schema.is_object()) return false;
  for (const auto& [key, value] : schema.items()) {
    if (!kAnnotations.contains(key)) return false;
  }
  return true;
}

void check_keywords(const Json& schema, const std::string& pointer) {
  for (const auto& [key, value] : schema.items()) {
    if (key == "not" && accepts_everything(value)) {
      unsatisfiable(pointer, "'not' of a schema that every value satisfies");
    }
    const bool known = kAnnotations.contains(key) || kStringKeywords.contains(key) || kNumberKeywords.contains(key) ||
                       kObjectKeywords.contains(key) || kArrayKeywords.contains(key) || kCombinators.contains(key);
    if (!known || (key == "uniqueItems" && value != false)) unsupported_keyword(key, pointer);
  }
}

void only_annotations_beside(const Json& schema, std::string_view keyword, const std::string& pointer,
                             std::string_view also_allowed = "") {
  for (const auto& [key, value] : schema.items()) {
    if (key == keyword || key == also_allowed || kAnnotations.contains(key)) continue;
    throw GrammarError("JSON Schema keyword '" + key + "' beside '" + std::string(keyword) + "' is not supported (at " +
                       pointer + ")");
  }
}

std::vector<std::string> declared_types(const Json& schema, const std::string& pointer) {
  std::vector<std::string> types;
  if (!schema.contains("type")) return types;
  const Json& type = schema.at("type");
  const Json list = type.is_array() ? type : Json::array({type});
  if (list.empty()) invalid("type", pointer, "must be a string or a non-empty array of strings");
  for (const auto& t : list) {
    if (!t.is_string()) invalid("type", pointer, "must be a string or a non-empty array of strings");
    const auto name = t.get<std::string>();
    if (std::find(std::begin(kTypes), std::end(kTypes), name) == std::end(kTypes)) {
      invalid("type", pointer, "names an unknown type '" + name + "'");
    }
    if (std::find(types.begin(), types.end(), name) == types.end()) types.push_back(name);
  }
  return types;
}

bool has_type(const Json& value, std::string_view type) {
  if (type == "null") return value.is_null();
  if (type == "boolean") return value.is_boolean();
  if (type == "string") return value.is_string();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "number") return value.is_number();
  // JSON Schema counts 1.0 as an integer.
  return value.is_number_integer() ||
         (value.is_number_float() && value.get<double>() == std::floor(value.get<double>()));
}

std::string join_alternatives(const std::vector<std::string>& options) {
  std::string out;
  for (const auto& o : options) out += (out.empty() ? "" : " | ") + o;
  return out;
}

}  // namespace

std::string SchemaVisitor::visit(const Json& schema, const std::string& name, const std::string& pointer) {
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) unsatisfiable(pointer, "the schema is false");
    return add_helper(rules_, "value");
  }
  if (!schema.is_object())
    throw GrammarError("invalid JSON Schema: a schema must be an object or a boolean (at " + pointer + ")");
  check_keywords(schema, pointer);
  if (schema.contains("$ref")) {
    only_annotations_beside(schema, "$ref", pointer);
    return visit_ref(schema.at("$ref"), name, pointer);
  }
  for (const char* keyword : {"anyOf", "oneOf"}) {
    if (!schema.contains(keyword)) continue;
    only_annotations_beside(schema, keyword, pointer);
    return visit_any_of(schema.at(keyword), name, json_pointer_append(pointer, keyword));
  }
  if (schema.contains("allOf")) {
    only_annotations_beside(schema, "allOf", pointer);
    const Json& all_of = schema.at("allOf");
    if (!all_of.is_array() || all_of.empty()) invalid("allOf", pointer, "must be a non-empty array of schemas");
    if (all_of.size() > 1) {
      throw GrammarError("JSON Schema keyword 'allOf' with more than one schema is not supported (at " + pointer + ")");
    }
    return visit(all_of[0], name, json_pointer_append(pointer, "allOf") + "/0");
  }
  if (schema.contains("const") || schema.contains("enum")) return visit_literals(schema, name, pointer);
  return visit_types(schema, name, pointer);
}

std::string SchemaVisitor::visit_ref(const Json& ref, const std::string& name, const std::string& pointer) {
  if (!ref.is_string()) invalid("$ref", pointer, "must be a string");
  const auto target = ref.get<std::string>();
  if (target.empty() || target[0] != '#') {
    throw GrammarError("JSON Schema '$ref' to another document ('" + target + "') is not supported (at " + pointer +
                       ")");
  }
  const std::string target_pointer = target.substr(1);
  if (auto known = ref_rules_.find(target_pointer); known != ref_rules_.end()) {
    referenced_.insert(known->second);
    return known->second;
  }
  const Json* resolved = nullptr;
  try {
    resolved = &document_.at(Json::json_pointer(target_pointer));
  } catch (const nlohmann::json::exception&) {
    invalid("$ref", pointer, "points to '" + target + "', which is not in the schema");
  }
  const size_t slash = target_pointer.rfind('/');
  const std::string base = slash == std::string::npos ? name : prefix_ + "-" + target_pointer.substr(slash + 1);
  return visit_named(*resolved, base, target_pointer, "#" + target_pointer);
}

std::string SchemaVisitor::visit_named(const Json& schema, const std::string& base, const std::string& ref_key,
                                       const std::string& pointer) {
  // The rule's name is taken before its body is built, so references back to it (recursion) resolve.
  const std::string reserved = add_rule(rules_, base, kPending + ref_key);
  ref_rules_[ref_key] = reserved;
  building_refs_.push_back(reserved);
  std::string built;
  try {
    built = visit(schema, reserved, pointer);
  } catch (...) {
    building_refs_.pop_back();
    throw;
  }
  building_refs_.pop_back();
  if (!rules_.at(reserved).starts_with(kPending)) return reserved;
  if (referenced_.contains(reserved)) {  // built under another name (a helper): an alias
    rules_[reserved] = built;
    return reserved;
  }
  rules_.erase(reserved);
  ref_rules_[ref_key] = built;
  return built;
}

std::string SchemaVisitor::add(std::string_view wanted, const std::string& body) {
  if (!building_refs_.empty() && wanted == building_refs_.back() &&
      rules_.at(building_refs_.back()).starts_with(kPending)) {
    rules_[building_refs_.back()] = body;
    return building_refs_.back();
  }
  return add_rule(rules_, wanted, body);
}

std::string SchemaVisitor::visit_any_of(const Json& branches, const std::string& name, const std::string& pointer) {
  const std::string keyword = pointer.substr(pointer.rfind('/') + 1);
  if (!branches.is_array() || branches.empty()) invalid(keyword, pointer, "must be a non-empty array of schemas");
  std::vector<std::string> options;
  for (size_t i = 0; i < branches.size(); ++i) {
    const Rules rules_before = rules_;
    const auto refs_before = ref_rules_;
    try {
      options.push_back(visit(branches[i], name + "-" + std::to_string(i), pointer + "/" + std::to_string(i)));
    } catch (const Unsatisfiable&) {  // a branch nothing satisfies adds nothing to the union
      rules_ = rules_before;
      ref_rules_ = refs_before;
    }
  }
  if (options.empty()) unsatisfiable(pointer, "no branch of '" + keyword + "' can be satisfied");
  if (options.size() == 1) return options[0];
  return add(name, join_alternatives(options));
}

std::string SchemaVisitor::visit_literals(const Json& schema, const std::string& name, const std::string& pointer) {
  const bool is_const = schema.contains("const");
  if (is_const && schema.contains("enum")) {
    throw GrammarError("JSON Schema keyword 'enum' beside 'const' is not supported (at " + pointer + ")");
  }
  const char* keyword = is_const ? "const" : "enum";
  only_annotations_beside(schema, keyword, pointer, "type");
  const Json values = is_const ? Json::array({schema.at("const")}) : schema.at("enum");
  if (!values.is_array() || values.empty()) invalid("enum", pointer, "must be a non-empty array");
  const std::vector<std::string> types = declared_types(schema, pointer);
  std::vector<std::string> options;
  for (const auto& value : values) {
    const bool typed =
        types.empty() || std::any_of(types.begin(), types.end(), [&](auto& t) { return has_type(value, t); });
    if (typed) options.push_back(gbnf_literal(value.dump()));
  }
  if (options.empty()) unsatisfiable(pointer, std::string("no '") + keyword + "' value has the declared type");
  return add(name, "(" + join_alternatives(options) + ") " + add_helper(rules_, "space"));
}

std::string SchemaVisitor::visit_types(const Json& schema, const std::string& name, const std::string& pointer) {
  std::vector<std::string> types = declared_types(schema, pointer);
  if (types.empty()) {  // no type: the kinds its keywords constrain (a subset of "any value")
    auto uses = [&](const auto& keywords) {
      return std::any_of(keywords.begin(), keywords.end(), [&](auto& k) { return schema.contains(k); });
    };
    if (uses(kObjectKeywords)) types.push_back("object");
    if (uses(kArrayKeywords)) types.push_back("array");
    if (uses(kStringKeywords)) types.push_back("string");
    if (uses(kNumberKeywords)) types.push_back("number");
    if (types.empty()) return add_helper(rules_, "value");
  }
  std::vector<std::string> options;
  std::optional<Unsatisfiable> last_failure;
  for (const auto& type : types) {
    const std::string type_name = types.size() == 1 ? name : name + "-" + type;
    const Rules rules_before = rules_;
    const auto refs_before = ref_rules_;
    try {
      if (type == "string")
        options.push_back(string_rule(schema, type_name, pointer));
      else if (type == "integer")
        options.push_back(integer_rule(schema, type_name, pointer));
      else if (type == "number")
        options.push_back(number_rule(schema, type_name, pointer));
      else if (type == "object")
        options.push_back(object_rule(schema, type_name, pointer));
      else if (type == "array")
        options.push_back(array_rule(schema, type_name, pointer));
      else
        options.push_back(add_helper(rules_, type));  // boolean, null
    } catch (const Unsatisfiable& e) {                // one type of a union that matches nothing drops out
      rules_ = rules_before;
      ref_rules_ = refs_before;
      last_failure = e;
    }
  }
  if (options.empty()) throw *last_failure;
  if (options.size() == 1) return options[0];
  return add(name, join_alternatives(options));
}

}  // namespace json_schema

std::string JsonSchemaConverter::add(const nlohmann::ordered_json& schema, std::string_view name) {
  json_schema::Rules rules = rules_;  // a schema that fails adds nothing
  const std::string base = sanitize_rule_name(name).empty() ? "schema" : sanitize_rule_name(name);
  json_schema::SchemaVisitor visitor(rules, schema, base);
  const std::string rule = visitor.visit_root();
  rules_ = std::move(rules);
  return rule;
}

std::string JsonSchemaConverter::grammar(std::string_view root_expression) const {
  std::string out = "root ::= " + std::string(root_expression) + "\n";
  for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
  return out;
}

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema) {
  JsonSchemaConverter converter;
  return converter.grammar(converter.add(schema, "schema"));
}

std::string json_object_gbnf() {
  JsonSchemaConverter converter;
  return converter.grammar(converter.add({{"type", "object"}}, "object"));
}

}  // namespace parley::structured
