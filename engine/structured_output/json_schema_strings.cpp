// The shared helper rules, the rule table, errors, and string schemas (lengths, patterns, formats).
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/structured_output/gbnf_text.hpp"
#include "engine/structured_output/json_schema_internal.hpp"
#include "engine/structured_output/regex_grammar.hpp"

namespace parley::structured::json_schema {
namespace {

struct Helper {
  const char* body;
  std::vector<const char*> uses;
};

// Bounded: at most one newline and 20 spaces or tabs between tokens, 16 digits per number part and
// exponents below 100 (so every number is a finite double).
const std::map<std::string, Helper, std::less<>>& helpers() {
  static const std::map<std::string, Helper, std::less<>> table = {
      {"space", {R"(| " " | "\n" [ \t]{0,20})", {}}},
      // \u escapes name no lone surrogate: strict parsers refuse those.
      {"char", {R"([^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" unicode-escape))", {"unicode-escape"}}},
      {"unicode-escape",
       {R"([0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} | )"
        R"([dD] [89abAB] [0-9a-fA-F]{2} "\\u" [dD] [c-fC-F] [0-9a-fA-F]{2})",
        {}}},
      {"string", {R"("\"" char* "\"" space)", {"char", "space"}}},
      {"integral-part", {R"("0" | [1-9] [0-9]{0,15})", {}}},
      {"decimal-part", {R"([0-9]{1,16})", {}}},
      {"integer", {R"("-"? integral-part space)", {"integral-part", "space"}}},
      {"number",
       {R"("-"? integral-part ("." decimal-part)? ([eE] [-+]? [0-9]{1,2})? space)",
        {"integral-part", "decimal-part", "space"}}},
      {"boolean", {R"(("true" | "false") space)", {"space"}}},
      {"null", {R"("null" space)", {"space"}}},
      {"value",
       {R"(object | array | string | number | boolean | null)",
        {"object", "array", "string", "number", "boolean", "null"}}},
      {"object",
       {R"("{" space (string ":" space value ("," space string ":" space value)*)? "}" space)",
        {"string", "value", "space"}}},
      {"array", {R"("[" space (value ("," space value)*)? "]" space)", {"value", "space"}}},
      // Formats: RFC 3339 dates (day limits per month, February up to 29) and times, RFC 4122 UUIDs,
      // and a conservative subset of email addresses (dot-atoms, hyphenated domain labels).
      {"date",
       {R"([0-9]{4} "-" (("0" [13578] | "1" [02]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]) | )"
        R"(("0" [469] | "11") "-" ("0" [1-9] | [12] [0-9] | "30") | "02-" ("0" [1-9] | [12] [0-9])))",
        {}}},
      {"time",
       {R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,9})? )"
        R"(("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))",
        {}}},
      {"date-time", {R"(date "T" time)", {"date", "time"}}},
      {"uuid", {R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})", {}}},
      {"email-atom", {R"([A-Za-z0-9!#$%&'*+/=?^_`{|}~\x2D]+)", {}}},
      {"domain-label", {R"([A-Za-z0-9]+ ("-" [A-Za-z0-9]+)*)", {}}},
      {"email",
       {R"(email-atom ("." email-atom)* "@" domain-label ("." domain-label)+)", {"email-atom", "domain-label"}}},
      {"ipv4-octet", {R"("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9])", {}}},
      {"ipv4", {R"(ipv4-octet "." ipv4-octet "." ipv4-octet "." ipv4-octet)", {"ipv4-octet"}}},
  };
  return table;
}

constexpr const char* kFormats[] = {"date", "time", "date-time", "uuid", "email", "ipv4"};

}  // namespace

[[noreturn]] void unsupported_keyword(std::string_view keyword, std::string_view pointer) {
  throw GrammarError("JSON Schema keyword '" + std::string(keyword) + "' is not supported (at " + std::string(pointer) +
                     ")");
}

[[noreturn]] void invalid(std::string_view keyword, std::string_view pointer, std::string_view why) {
  throw GrammarError("invalid JSON Schema: '" + std::string(keyword) + "' " + std::string(why) + " (at " +
                     std::string(pointer) + ")");
}

[[noreturn]] void unsatisfiable(std::string_view pointer, std::string_view why) {
  throw Unsatisfiable("unsatisfiable JSON Schema: " + std::string(why) + " (at " + std::string(pointer) + ")");
}

std::string json_pointer_append(std::string_view pointer, std::string_view token) {
  std::string out(pointer);
  out += '/';
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

bool is_helper(std::string_view name) {
  return name == "root" || helpers().contains(name) ||
         std::any_of(std::begin(kFormats), std::end(kFormats),
                     [&](auto f) { return name == std::string(f) + "-string"; });
}

std::string add_helper(Rules& rules, std::string_view name) {
  const Helper& helper = helpers().find(name) != helpers().end() ? helpers().find(name)->second
                                                                 : throw std::out_of_range(std::string(name));
  const std::string key(name);
  if (rules.contains(key)) return key;
  rules[key] = helper.body;
  for (const char* used : helper.uses) add_helper(rules, used);
  return key;
}

std::string add_rule(Rules& rules, std::string_view wanted, const std::string& body) {
  std::string base = sanitize_rule_name(wanted);
  if (base.empty()) base = "schema";
  std::string name = base;
  for (int n = 1; is_helper(name) || (rules.contains(name) && rules.at(name) != body); ++n) {
    name = base + "-" + std::to_string(n);
  }
  rules[name] = body;
  return name;
}

// A trie over the names: a key leaves it at its first character that no name continues with (a plain
// character, so escapes cannot spell a name), or ends where no name ends.
std::string string_other_than(const std::vector<std::string>& names) {
  struct Node {
    std::map<char32_t, std::unique_ptr<Node>> next;
    bool name_ends = false;
  };
  Node root;
  for (const auto& name : names) {
    Node* node = &root;
    for (const auto& c : decode_utf8(name, "a property name")) {
      auto& child = node->next[c.codepoint];
      if (!child) child = std::make_unique<Node>();
      node = child.get();
    }
    node->name_ends = true;
  }
  auto expression = [](auto& self, const Node& node) -> std::string {
    CodepointSet plain = CodepointSet::range(0x20, kMaxCodepoint).minus(CodepointSet::single('"'));
    plain = plain.minus(CodepointSet::single('\\'));
    std::vector<std::string> options;
    for (const auto& [c, child] : node.next) {
      plain = plain.minus(CodepointSet::single(c));
      std::string utf8;
      append_utf8(utf8, c);
      const std::string quoted = nlohmann::json(utf8).dump();  // the name's character as JSON writes it
      const std::string escaped = quoted.substr(1, quoted.size() - 2);
      const std::string rest = self(self, *child);
      options.push_back(gbnf_literal(escaped) + (rest.empty() ? "" : " " + rest));
    }
    if (!plain.empty()) options.push_back(gbnf_class(plain) + " char*");
    std::string out;
    for (const auto& o : options) out += (out.empty() ? "" : " | ") + o;
    if (out.empty()) return "";
    return "(" + out + ")" + (node.name_ends ? "" : "?");
  };
  return R"("\"" )" + expression(expression, root) + R"( "\"")";
}

std::string SchemaVisitor::string_rule(const Json& schema, const std::string& name, const std::string& pointer) {
  const std::string quote = R"("\"")";
  const std::string space = add_helper(rules_, "space");
  const bool has_length = schema.contains("minLength") || schema.contains("maxLength");
  if (schema.contains("format")) {
    const Json& format = schema.at("format");
    if (!format.is_string()) invalid("format", pointer, "must be a string");
    const auto known = std::find(std::begin(kFormats), std::end(kFormats), format.get<std::string>());
    if (known == std::end(kFormats)) {
      throw GrammarError("JSON Schema format '" + format.get<std::string>() + "' is not supported (at " + pointer +
                         "); supported: date, time, date-time, uuid, email, ipv4");
    }
    if (has_length || schema.contains("pattern")) {
      unsupported_keyword(has_length ? "minLength/maxLength" : "pattern", pointer + " beside 'format'");
    }
    const std::string inner = add_helper(rules_, *known);
    rules_[inner + "-string"] = quote + " " + inner + " " + quote + " " + space;
    return inner + "-string";
  }
  if (schema.contains("pattern")) {
    const Json& pattern = schema.at("pattern");
    if (!pattern.is_string()) invalid("pattern", pointer, "must be a string");
    if (has_length) unsupported_keyword("minLength/maxLength", pointer + " beside 'pattern'");
    std::string expression;
    try {
      expression = regex_to_gbnf_expression(pattern.get<std::string>(), RegexText::JsonString);
    } catch (const GrammarError& e) {
      throw GrammarError(std::string(e.what()) + " (in 'pattern' at " + pointer + ")");
    }
    return add(name, quote + " (" + expression + ") " + quote + " " + space);
  }
  if (!has_length) return add_helper(rules_, "string");
  auto length = [&](const char* keyword, int64_t fallback) {
    if (!schema.contains(keyword)) return fallback;
    const Json& v = schema.at(keyword);
    if (!v.is_number_integer() || v.get<int64_t>() < 0) invalid(keyword, pointer, "must be a non-negative integer");
    return v.get<int64_t>();
  };
  const int64_t min = length("minLength", 0), max = length("maxLength", -1);
  if (max >= 0 && min > max) {
    unsatisfiable(pointer, "minLength " + std::to_string(min) + " is greater than maxLength " + std::to_string(max));
  }
  const std::string chars = add_helper(rules_, "char");
  std::string count = "{" + std::to_string(min) + "," + (max >= 0 ? std::to_string(max) : "") + "}";
  if (max == min) count = "{" + std::to_string(min) + "}";
  return add(name, quote + " " + chars + count + " " + quote + " " + space);
}

}  // namespace parley::structured::json_schema
