// STUB (branch `tools`): stands in for the lead's JSON Schema -> GBNF converter until it lands on main,
// with its interface; on merge, take main's file. It ignores the schema: every rule it adds is "any JSON
// object" (llama.cpp's grammars/json.gbnf), so tool arguments are JSON but not checked against parameters.
#pragma once
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace parley::structured {

class JsonSchemaConverter {
 public:
  // A rule for values of `schema`, named after `name`; returns the rule's name.
  std::string add(const nlohmann::json& /*schema (ignored by the stub)*/, std::string_view name) {
    std::string rule;
    for (char c : name) rule += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '-';
    rules_.push_back(rule + " ::= json-object");
    return rule;
  }
  // The whole GBNF text: root ::= root_expression, the rules added, and the JSON rules they use.
  std::string grammar(std::string_view root_expression) const {
    std::string out = "root ::= " + std::string(root_expression) + "\n";
    for (const auto& r : rules_) out += r + "\n";
    out += R"(json-object ::= "{" json-ws ( json-string ":" json-ws json-value ( "," json-ws json-string ":" json-ws json-value )* )? "}" json-ws
json-value ::= json-object | json-array | json-string | json-number | ( "true" | "false" | "null" ) json-ws
json-array ::= "[" json-ws ( json-value ( "," json-ws json-value )* )? "]" json-ws
json-string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\"" json-ws
json-number ::= "-"? ( [0-9] | [1-9] [0-9]{0,15} ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9] [1-9]{0,15} )? json-ws
json-ws ::= | " " | "\n" [ \t]{0,20}
)";
    return out;
  }

 private:
  std::vector<std::string> rules_;
};

}  // namespace parley::structured
