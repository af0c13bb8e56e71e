// Object and array schemas.
#include <set>
#include <string>
#include <vector>

#include "engine/structured_output/gbnf_text.hpp"
#include "engine/structured_output/json_schema_internal.hpp"

namespace parley::structured::json_schema {
namespace {

// `item` repeated between lo and hi times (hi < 0: no limit); empty when hi is 0.
std::string repeated(const std::string& item, int64_t lo, int64_t hi) {
  if (hi == 0) return "";
  if (lo == 0 && hi == 1) return item + "?";
  if (lo == 1 && hi == 1) return item;
  if (hi < 0) return item + (lo == 0 ? "*" : lo == 1 ? "+" : "{" + std::to_string(lo) + ",}");
  if (lo == hi) return item + "{" + std::to_string(lo) + "}";
  return item + "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const auto& p : parts) {
    if (p.empty()) continue;
    out += (out.empty() ? "" : separator) + p;
  }
  return out;
}

int64_t count_keyword(const Json& schema, const char* keyword, int64_t fallback, const std::string& pointer) {
  if (!schema.contains(keyword)) return fallback;
  const Json& v = schema.at(keyword);
  if (!v.is_number_integer() || v.get<int64_t>() < 0) invalid(keyword, pointer, "must be a non-negative integer");
  return v.get<int64_t>();
}

}  // namespace

// Required properties in schema order, then any subset of the optional ones in schema order, then
// additional properties. additionalProperties absent means none when `properties` is given and any
// when it is not (llama.cpp's reading, which keeps generated objects to the declared shape).
std::string SchemaVisitor::object_rule(const Json& schema, const std::string& name, const std::string& pointer) {
  const Json no_properties = Json::object();
  const Json& properties = schema.contains("properties") ? schema.at("properties") : no_properties;
  if (!properties.is_object()) invalid("properties", pointer, "must be an object");
  std::set<std::string> required;
  if (schema.contains("required")) {
    const Json& list = schema.at("required");
    if (!list.is_array()) invalid("required", pointer, "must be an array of strings");
    for (const auto& r : list) {
      if (!r.is_string()) invalid("required", pointer, "must be an array of strings");
      if (!properties.contains(r.get<std::string>())) {
        throw GrammarError("JSON Schema 'required' property '" + r.get<std::string>() +
                           "' without a schema in 'properties' is not supported (at " + pointer + ")");
      }
      required.insert(r.get<std::string>());
    }
  }
  const Json additional = schema.contains("additionalProperties") ? schema.at("additionalProperties")
                                                                  : Json(!schema.contains("properties"));
  if (!additional.is_boolean() && !additional.is_object()) {
    invalid("additionalProperties", pointer, "must be a boolean or a schema");
  }
  const std::string space = add_helper(rules_, "space");
  if (properties.empty() && additional == true) return add_helper(rules_, "object");

  std::vector<std::string> required_kvs, optional_kvs, declared_names;
  for (const auto& [key, value_schema] : properties.items()) {
    declared_names.push_back(key);
    const bool is_required = required.contains(key);
    const std::string value_pointer = json_pointer_append(json_pointer_append(pointer, "properties"), key);
    std::string value_rule;
    const Rules rules_before = rules_;
    const auto refs_before = ref_rules_;
    try {
      value_rule = visit(value_schema, name + "-" + key, value_pointer);
    } catch (const Unsatisfiable&) {
      if (is_required) throw;
      rules_ = rules_before;  // an optional property no value satisfies is never written
      ref_rules_ = refs_before;
      continue;
    }
    const std::string kv = add(name + "-" + key + "-kv",
                               gbnf_literal(Json(key).dump()) + " " + space + " \":\" " + space + " " + value_rule);
    (is_required ? required_kvs : optional_kvs).push_back(kv);
  }

  std::string extra_kv;
  if (additional != false) {
    std::string value_rule = add_helper(rules_, "value");
    if (additional.is_object()) {
      try {
        value_rule =
            visit(additional, name + "-additional-value", json_pointer_append(pointer, "additionalProperties"));
      } catch (const Unsatisfiable&) {
        value_rule.clear();  // no additional value fits: no additional properties
      }
    }
    if (!value_rule.empty()) {
      add_helper(rules_, "char");
      const std::string key_rule = declared_names.empty()
                                       ? add_helper(rules_, "string")
                                       : add(name + "-additional-key", string_other_than(declared_names) + " " + space);
      extra_kv = add(name + "-additional-kv", key_rule + " \":\" " + space + " " + value_rule);
    }
  }

  const std::string comma = "\",\" " + space + " ";
  const std::string extras = extra_kv.empty() ? "" : "(" + comma + extra_kv + ")*";
  // after[i]: whatever may follow optional property i - 1: a subset of the optional ones from i on,
  // then additional properties. Kept as rules so the object's rule stays linear in the property count.
  std::vector<std::string> after(optional_kvs.size() + 1);
  after[optional_kvs.size()] = extras;
  const size_t first_after = required_kvs.empty() ? 1 : 0;  // with no required property, after[0] is unused
  for (size_t i = optional_kvs.size(); i-- > first_after;) {
    after[i] =
        add(name + "-after-" + std::to_string(i), join({"(" + comma + optional_kvs[i] + ")?", after[i + 1]}, " "));
  }
  std::string members;
  if (!required_kvs.empty()) {
    members = join({join(required_kvs, " " + comma), after[0]}, " ");
  } else {
    std::vector<std::string> firsts;  // the first member written, and what may follow it
    for (size_t i = 0; i < optional_kvs.size(); ++i) firsts.push_back(join({optional_kvs[i], after[i + 1]}, " "));
    if (!extra_kv.empty()) firsts.push_back(join({extra_kv, extras}, " "));
    if (!firsts.empty()) members = "(" + join(firsts, " | ") + ")?";
  }
  return add(name, join({"\"{\" " + space, members, "\"}\" " + space}, " "));
}

// prefixItems, then `items` for the rest; a shorter array than prefixItems is not generated. items
// absent after prefixItems means no more items (llama.cpp), and any items without prefixItems.
std::string SchemaVisitor::array_rule(const Json& schema, const std::string& name, const std::string& pointer) {
  const int64_t min = count_keyword(schema, "minItems", 0, pointer);
  const int64_t max = count_keyword(schema, "maxItems", -1, pointer);
  if (max >= 0 && min > max) {
    unsatisfiable(pointer, "minItems " + std::to_string(min) + " is greater than maxItems " + std::to_string(max));
  }
  const std::string space = add_helper(rules_, "space");
  std::vector<std::string> prefix;
  if (schema.contains("prefixItems")) {
    const Json& list = schema.at("prefixItems");
    if (!list.is_array()) invalid("prefixItems", pointer, "must be an array of schemas");
    const size_t written = max >= 0 ? std::min<size_t>(list.size(), size_t(max)) : list.size();
    for (size_t i = 0; i < written; ++i) {
      prefix.push_back(visit(list[i], name + "-" + std::to_string(i),
                             json_pointer_append(pointer, "prefixItems") + "/" + std::to_string(i)));
    }
  }
  std::string item;  // empty: no further items
  const Json items = schema.contains("items") ? schema.at("items") : Json(!schema.contains("prefixItems"));
  if (items.is_array()) {
    throw GrammarError(
        "JSON Schema keyword 'items' as an array (draft-4 tuples) is not supported; use 'prefixItems' "
        "(at " +
        pointer + ")");
  }
  if (!items.is_boolean() && !items.is_object()) invalid("items", pointer, "must be a schema");
  if (items.is_object() || items == true) {
    try {
      item = visit(items, name + "-item", json_pointer_append(pointer, "items"));
    } catch (const Unsatisfiable&) {
      item.clear();
    }
  }
  const auto fixed = int64_t(prefix.size());
  const bool all_prefix_written = !schema.contains("prefixItems") || fixed == int64_t(schema.at("prefixItems").size());
  const int64_t more_min = std::max<int64_t>(0, min - fixed);
  const int64_t more_max = !all_prefix_written || item.empty() ? 0 : max < 0 ? -1 : max - fixed;
  if (more_min > more_max && more_max >= 0) {
    unsatisfiable(pointer, "minItems " + std::to_string(min) + " needs more items than the schema allows");
  }
  const std::string comma = "\",\" " + space + " ";
  std::string elements;
  if (fixed > 0) {
    elements = join({join(prefix, " " + comma), repeated("(" + comma + item + ")", more_min, more_max)}, " ");
  } else if (more_max != 0) {
    const std::string rest =
        repeated("(" + comma + item + ")", std::max<int64_t>(0, more_min - 1), more_max < 0 ? -1 : more_max - 1);
    elements = join({item, rest}, " ");
    if (more_min == 0) elements = "(" + elements + ")?";
  }
  return add(name, join({"\"[\" " + space, elements, "\"]\" " + space}, " "));
}

}  // namespace parley::structured::json_schema
