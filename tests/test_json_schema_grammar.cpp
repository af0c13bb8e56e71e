// JSON Schema to GBNF (engine/structured_output/json_schema_grammar.hpp): the texts accepted and
// rejected by the grammar built from a schema, the keywords refused, and the rules' names.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "engine/structured_output/grammar.hpp"
#include "engine/structured_output/json_schema_grammar.hpp"
#include "tests/grammar_sampler.hpp"

using namespace parley::structured;
using Catch::Matchers::Contains;
using Json = nlohmann::ordered_json;

namespace {

Grammar schema_grammar(const char* schema) { return Grammar::parse(json_schema_to_gbnf(Json::parse(schema))); }

std::string conversion_error(const char* schema) {
  try {
    json_schema_to_gbnf(Json::parse(schema));
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "(no error)";
}

size_t codepoints(const std::string& utf8) {
  return size_t(
      std::count_if(utf8.begin(), utf8.end(), [](char c) { return (static_cast<unsigned char>(c) >> 6) != 2; }));
}

}  // namespace

TEST_CASE("random sentences of a schema's grammar are JSON instances of the schema", "[json_schema]") {
  const Grammar g = schema_grammar(R"({"type": "object", "properties": {
      "id": {"type": "integer", "minimum": -50, "maximum": 1000},
      "name": {"type": "string", "minLength": 1, "maxLength": 8},
      "score": {"type": "number", "minimum": 0, "maximum": 1},
      "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
      "code": {"type": "string", "pattern": "[A-Z]{2}\\d"},
      "when": {"type": "string", "format": "date"},
      "meta": {"type": "object"}},
      "required": ["id", "name"]})");
  const std::regex code("[A-Z]{2}[0-9]");
  std::mt19937 rng(11);
  for (int i = 0; i < 300; ++i) {
    std::string text;
    random_sentence(g, rng, text);
    INFO(text);
    REQUIRE(g.matches(text));
    const nlohmann::json value = nlohmann::json::parse(text);  // throws on anything but JSON
    REQUIRE(value.is_object());
    CHECK(value.at("id").is_number_integer());
    CHECK(value.at("id").get<int64_t>() >= -50);
    CHECK(value.at("id").get<int64_t>() <= 1000);
    CHECK(codepoints(value.at("name").get<std::string>()) >= 1);
    CHECK(codepoints(value.at("name").get<std::string>()) <= 8);
    if (value.contains("score")) CHECK((value.at("score").get<double>() >= 0 && value.at("score").get<double>() <= 1));
    if (value.contains("tags")) CHECK(value.at("tags").size() <= 3);
    if (value.contains("code")) CHECK(std::regex_match(value.at("code").get<std::string>(), code));
    for (const auto& [key, v] : value.items()) {
      CHECK(std::string("id name score tags code when meta").find(key) != std::string::npos);
    }
  }
}

TEST_CASE("random sentences of the json_object grammar parse as JSON objects", "[json_schema]") {
  const Grammar g = Grammar::parse(json_object_gbnf());
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) {
    std::string text;
    random_sentence(g, rng, text);
    INFO(text);
    CHECK(nlohmann::json::parse(text).is_object());
  }
}

TEST_CASE("an integer property accepts integers and rejects other values", "[json_schema]") {
  const Grammar g =
      schema_grammar(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})");
  CHECK(g.matches(R"({"a": 1})"));
  CHECK(g.matches(R"({"a":-42})"));
  CHECK(g.matches("{\n  \"a\" : 7 }"));
  CHECK_FALSE(g.matches(R"({"a": "x"})"));
  CHECK_FALSE(g.matches(R"({"a": 1.5})"));
  CHECK_FALSE(g.matches(R"({"a": 01})"));
  CHECK_FALSE(g.matches(R"({})"));
  CHECK_FALSE(g.matches(R"({"a": 1, "b": 2})"));  // additionalProperties absent beside properties: none
}

TEST_CASE("required properties must be present and optional ones may be left out in schema order", "[json_schema]") {
  const Grammar g = schema_grammar(R"({"type": "object", "properties": {
      "x": {"type": "string"}, "id": {"type": "integer"}, "y": {"type": "boolean"}, "z": {"type": "null"}},
      "required": ["id"]})");
  CHECK(g.matches(R"({"id": 1})"));
  CHECK(g.matches(R"({"id": 1, "x": "a", "y": true, "z": null})"));
  CHECK(g.matches(R"({"id": 1, "z": null})"));
  CHECK(g.matches(R"({"id": 1, "x": "a", "z": null})"));
  CHECK_FALSE(g.matches(R"({"x": "a"})"));
  CHECK_FALSE(g.matches(R"({"id": 1, "z": null, "x": "a"})"));  // optional ones keep schema order
  CHECK_FALSE(g.matches(R"({"x": "a", "id": 1})"));             // required ones come first
  CHECK_FALSE(g.matches(R"({"id": 1, "x": "a", "x": "b"})"));
  CHECK_FALSE(g.matches(R"({"id": 1,})"));
}

TEST_CASE("an object without required properties accepts every ordered subset", "[json_schema]") {
  const Grammar g = schema_grammar(R"({"type": "object", "properties": {
      "a": {"const": 1}, "b": {"const": 2}, "c": {"const": 3}}})");
  CHECK(g.matches("{}"));
  for (const char* text : {R"({"a": 1})", R"({"b": 2})", R"({"c": 3})", R"({"a": 1, "c": 3})", R"({"b": 2, "c": 3})",
                           R"({"a": 1, "b": 2, "c": 3})"}) {
    INFO(text);
    CHECK(g.matches(text));
  }
  CHECK_FALSE(g.matches(R"({"c": 3, "a": 1})"));
  CHECK_FALSE(g.matches(R"({, "a": 1})"));
}

TEST_CASE("additional properties follow additionalProperties and never repeat a declared name", "[json_schema]") {
  const Grammar open = schema_grammar(R"({"type": "object", "properties": {"ab": {"type": "integer"}},
      "additionalProperties": {"type": "string"}})");
  CHECK(open.matches(R"({"ab": 1, "a": "x", "abc": "y", "": "z"})"));
  CHECK(open.matches(R"({"zz": "x"})"));
  CHECK_FALSE(open.matches(R"({"ab": 1, "ab": "x"})"));
  CHECK_FALSE(open.matches(R"({"q": 1})"));
  const Grammar closed =
      schema_grammar(R"({"type": "object", "properties": {"a": {}}, "additionalProperties": false})");
  CHECK(closed.matches(R"({"a": [1, {"b": null}]})"));
  CHECK_FALSE(closed.matches(R"({"a": 1, "b": 2})"));
  const Grammar any = schema_grammar(R"({"type": "object"})");
  CHECK(any.matches(R"({"k": [true, "v", -1.5e3], "": {}})"));
  CHECK_FALSE(any.matches("[]"));
}

TEST_CASE("enum and const accept only their values", "[json_schema]") {
  const Grammar g = schema_grammar(R"({"enum": ["red", "green", 3, null, {"k": [1]}]})");
  for (const char* text : {R"("red")", R"("green")", "3", "null", R"({"k":[1]})"}) CHECK(g.matches(text));
  for (const char* text : {R"("blue")", R"("re")", "4", "true", R"({"k": [2]})"}) CHECK_FALSE(g.matches(text));
  const Grammar typed = schema_grammar(R"({"type": "string", "enum": ["a", 1, "b"]})");
  CHECK(typed.matches(R"("b")"));
  CHECK_FALSE(typed.matches("1"));
  const Grammar one = schema_grammar(R"({"const": "only"})");
  CHECK(one.matches(R"("only")"));
  CHECK_FALSE(one.matches(R"("other")"));
}

TEST_CASE("every integer from -120 to 345 is accepted and no other number", "[json_schema]") {
  const Grammar g = schema_grammar(R"({"type": "integer", "minimum": -120, "maximum": 345})");
  for (int i = -1200; i <= 3450; ++i) {
    INFO(i);
    CHECK(g.matches(std::to_string(i)) == (i >= -120 && i <= 345));
  }
  for (const char* text : {"-0", "007", "00", "+5", "1.0", "1e2", ""}) CHECK_FALSE(g.matches(text));
}

TEST_CASE("integer ranges whose ends are not round numbers are exact", "[json_schema]") {
  const std::vector<std::pair<int, int>> ranges = {{37, 4321}, {-4321, -37}, {-987, 654}, {123, 129},  {5, 5},
                                                   {0, 0},     {-1, 0},      {199, 201},  {1998, 2003}};
  for (const auto& [lo, hi] : ranges) {
    const std::string schema =
        R"({"type": "integer", "minimum": )" + std::to_string(lo) + R"(, "maximum": )" + std::to_string(hi) + "}";
    const Grammar g = schema_grammar(schema.c_str());
    for (int i = -6000; i <= 6000; ++i) {
      INFO(schema << " " << i);
      CHECK(g.matches(std::to_string(i)) == (i >= lo && i <= hi));
    }
  }
}

TEST_CASE("exclusive and one-sided integer bounds are exact", "[json_schema]") {
  const Grammar exclusive = schema_grammar(R"({"type": "integer", "exclusiveMinimum": -10, "exclusiveMaximum": 10})");
  for (int i = -30; i <= 30; ++i) CHECK(exclusive.matches(std::to_string(i)) == (i > -10 && i < 10));
  const Grammar at_least = schema_grammar(R"({"type": "integer", "minimum": 95})");
  for (int i = -200; i <= 2000; ++i) CHECK(at_least.matches(std::to_string(i)) == (i >= 95));
  CHECK(at_least.matches("1234567890123456"));
  const Grammar at_most = schema_grammar(R"({"type": "integer", "maximum": -7})");
  for (int i = -2000; i <= 200; ++i) CHECK(at_most.matches(std::to_string(i)) == (i <= -7));
  const Grammar fractional = schema_grammar(R"({"type": "integer", "minimum": 1.5, "maximum": 4.5})");
  for (int i = -5; i <= 10; ++i) CHECK(fractional.matches(std::to_string(i)) == (i >= 2 && i <= 4));
}

TEST_CASE("a large integer range is exact on sampled values and at its ends", "[json_schema]") {
  const int64_t lo = -9876543219, hi = 123456789012;
  const Grammar g = schema_grammar(R"({"type": "integer", "minimum": -9876543219, "maximum": 123456789012})");
  std::mt19937_64 rng(5);
  std::vector<int64_t> samples = {lo, hi, lo - 1, hi + 1, 0, -1, 1, 999999999999, 1000000000000, -9999999999};
  for (int i = 0; i < 3000; ++i) {
    const int64_t span = int64_t(rng() % 400000000000ULL) - 200000000000LL;
    samples.push_back(span);
    samples.push_back(lo + int64_t(rng() % 2000) - 1000);
    samples.push_back(hi + int64_t(rng() % 2000) - 1000);
  }
  for (int64_t v : samples) {
    INFO(v);
    CHECK(g.matches(std::to_string(v)) == (v >= lo && v <= hi));
  }
}

TEST_CASE("numbers with integer bounds accept fractions inside and reject them outside", "[json_schema]") {
  const Grammar unit = schema_grammar(R"({"type": "number", "minimum": 0, "maximum": 1})");
  for (const char* text : {"0", "1", "0.5", "0.001", "1.0", "1.000", "0.9999"}) CHECK(unit.matches(text));
  for (const char* text : {"-0.5", "1.5", "1.0001", "2", "-1", "01"}) CHECK_FALSE(unit.matches(text));
  const Grammar open = schema_grammar(R"({"type": "number", "exclusiveMinimum": -2, "exclusiveMaximum": 3})");
  for (const char* text : {"-1.99", "-1", "0", "2.999", "-0.5"}) CHECK(open.matches(text));
  for (const char* text : {"-2", "-2.0", "-2.5", "3", "3.0", "3.01"}) CHECK_FALSE(open.matches(text));
  const Grammar between = schema_grammar(R"({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1})");
  CHECK(between.matches("0.5"));
  CHECK_FALSE(between.matches("0"));
  CHECK_FALSE(between.matches("1"));
  const Grammar below = schema_grammar(R"({"type": "number", "maximum": -3})");
  for (const char* text : {"-3", "-3.5", "-1000.25"}) CHECK(below.matches(text));
  for (const char* text : {"-2.5", "0", "3"}) CHECK_FALSE(below.matches(text));
}

TEST_CASE("string lengths count escapes as one character", "[json_schema]") {
  const Grammar g = schema_grammar(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  CHECK(g.matches(R"("ab")"));
  CHECK(g.matches(R"("a\nb")"));
  CHECK(g.matches(R"("\u00e9\"")"));
  CHECK_FALSE(g.matches(R"("a")"));
  CHECK_FALSE(g.matches(R"("abcd")"));
  CHECK_FALSE(g.matches("\"a\nb\""));  // a raw newline is not JSON
}

TEST_CASE("a pattern must match the whole string value", "[json_schema]") {
  const Grammar g = schema_grammar(R"({"type": "string", "pattern": "^[a-z]+-\\d{2}$"})");
  CHECK(g.matches(R"("abc-12")"));
  CHECK_FALSE(g.matches(R"("xabc-123")"));
  CHECK_FALSE(g.matches(R"("ABC-12")"));
  const Grammar quote = schema_grammar(R"({"type": "string", "pattern": "a\"b"})");
  CHECK(quote.matches(R"("a\"b")"));
}

TEST_CASE("string formats accept their syntax only", "[json_schema]") {
  const Grammar date = schema_grammar(R"({"type": "string", "format": "date"})");
  CHECK(date.matches(R"("2024-02-29")"));
  CHECK(date.matches(R"("1999-12-31")"));
  for (const char* bad : {R"("2024-02-30")", R"("2024-04-31")", R"("2024-13-01")", R"("24-01-01")"}) {
    CHECK_FALSE(date.matches(bad));
  }
  const Grammar time = schema_grammar(R"({"type": "string", "format": "time"})");
  CHECK(time.matches(R"("23:59:59Z")"));
  CHECK(time.matches(R"("08:30:00.123+02:00")"));
  CHECK_FALSE(time.matches(R"("24:00:00Z")"));
  const Grammar date_time = schema_grammar(R"({"type": "string", "format": "date-time"})");
  CHECK(date_time.matches(R"("2024-01-15T10:20:30Z")"));
  CHECK_FALSE(date_time.matches(R"("2024-01-15 10:20:30Z")"));
  const Grammar uuid = schema_grammar(R"({"type": "string", "format": "uuid"})");
  CHECK(uuid.matches(R"("123e4567-e89b-12d3-a456-426614174000")"));
  CHECK_FALSE(uuid.matches(R"("123e4567e89b12d3a456426614174000")"));
  const Grammar email = schema_grammar(R"({"type": "string", "format": "email"})");
  CHECK(email.matches(R"("first.last+tag@mail.example.com")"));
  CHECK_FALSE(email.matches(R"("no-at-sign.example.com")"));
  CHECK_FALSE(email.matches(R"("a@-bad.com")"));
  const Grammar ipv4 = schema_grammar(R"({"type": "string", "format": "ipv4"})");
  CHECK(ipv4.matches(R"("255.0.10.199")"));
  CHECK_FALSE(ipv4.matches(R"("256.0.0.1")"));
}

TEST_CASE("arrays follow items and prefixItems and their count bounds", "[json_schema]") {
  const Grammar g = schema_grammar(R"({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3})");
  CHECK(g.matches("[1]"));
  CHECK(g.matches("[1, 2, 3]"));
  CHECK_FALSE(g.matches("[]"));
  CHECK_FALSE(g.matches("[1, 2, 3, 4]"));
  CHECK_FALSE(g.matches(R"([1, "2"])"));
  const Grammar tuple = schema_grammar(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "null"}],
      "items": {"type": "boolean"}, "maxItems": 3})");
  CHECK(tuple.matches(R"(["a", null])"));
  CHECK(tuple.matches(R"(["a", null, true])"));
  CHECK_FALSE(tuple.matches(R"(["a", null, true, false])"));
  CHECK_FALSE(tuple.matches(R"([null, "a"])"));
  const Grammar any = schema_grammar(R"({"type": "array"})");
  CHECK(any.matches(R"([1, "a", [], {}])"));
  CHECK(any.matches("[]"));
}

TEST_CASE("anyOf and oneOf and type lists accept any of their branches", "[json_schema]") {
  const Grammar nullable = schema_grammar(R"({"type": ["string", "null"], "maxLength": 2})");
  CHECK(nullable.matches("null"));
  CHECK(nullable.matches(R"("ab")"));
  CHECK_FALSE(nullable.matches(R"("abc")"));
  const Grammar any_of = schema_grammar(R"({"anyOf": [{"type": "integer", "minimum": 5}, {"const": "none"}]})");
  CHECK(any_of.matches("7"));
  CHECK(any_of.matches(R"("none")"));
  CHECK_FALSE(any_of.matches("4"));
  const Grammar one_of = schema_grammar(R"({"oneOf": [{"type": "boolean"}, {"type": "array", "maxItems": 0}]})");
  CHECK(one_of.matches("false"));
  CHECK(one_of.matches("[]"));
  CHECK_FALSE(one_of.matches("[1]"));
  // A branch nothing satisfies is dropped rather than failing the schema.
  const Grammar dropped =
      schema_grammar(R"({"anyOf": [{"type": "integer", "minimum": 5, "maximum": 1}, {"type": "null"}]})");
  CHECK(dropped.matches("null"));
}

TEST_CASE("recursive refs become recursive rules", "[json_schema]") {
  const Grammar g = schema_grammar(R"({"$defs": {"node": {"type": "object", "properties": {
      "value": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
      "required": ["value", "next"]}}, "$ref": "#/$defs/node"})");
  CHECK(g.matches(R"({"value": 1, "next": null})"));
  CHECK(g.matches(R"({"value": 1, "next": {"value": 2, "next": {"value": 3, "next": null}}})"));
  CHECK_FALSE(g.matches(R"({"value": 1, "next": {"value": "2", "next": null}})"));
  const Grammar root = schema_grammar(R"({"type": "object", "properties": {"children": {"type": "array",
      "items": {"$ref": "#"}}}, "required": ["children"]})");
  CHECK(root.matches(R"({"children": [{"children": []}, {"children": [{"children": []}]}]})"));
  const Grammar definitions = schema_grammar(R"({"definitions": {"s": {"type": "string"}},
      "type": "array", "items": {"$ref": "#/definitions/s"}})");
  CHECK(definitions.matches(R"(["a", "b"])"));
  CHECK_FALSE(definitions.matches("[1]"));
}

TEST_CASE("whitespace between tokens is bounded", "[json_schema]") {
  const Grammar g = schema_grammar(R"({"type": "array", "items": {"type": "integer"}})");
  CHECK(g.matches("[1,\n" + std::string(20, ' ') + "2]"));
  CHECK_FALSE(g.matches("[1,\n" + std::string(21, ' ') + "2]"));
  CHECK_FALSE(g.matches("[1,  2]"));
  CHECK_FALSE(g.matches(" [1]"));
}

TEST_CASE("unsupported keywords are refused with their JSON pointer", "[json_schema]") {
  CHECK(conversion_error(R"({"type": "object", "properties": {"x": {"type": "number", "multipleOf": 2}}})") ==
        "JSON Schema keyword 'multipleOf' is not supported (at #/properties/x)");
  for (const char* keyword : {"patternProperties", "if", "not", "dependentRequired", "minProperties", "contentEncoding",
                              "uniqueItems", "unevaluatedProperties"}) {
    const std::string schema = std::string(R"({"type": "array", "items": {")") + keyword + R"(": {"type": "string"}}})";
    CHECK(conversion_error(schema.c_str()) ==
          "JSON Schema keyword '" + std::string(keyword) + "' is not supported (at #/items)");
  }
  CHECK_THAT(conversion_error(R"({"allOf": [{"type": "string"}, {"minLength": 1}]})"), Contains("'allOf'"));
  CHECK_THAT(conversion_error(R"({"type": "string", "format": "uri"})"), Contains("format 'uri' is not supported"));
  CHECK_THAT(conversion_error(R"({"type": "number", "minimum": 0.5})"), Contains("'minimum' is fractional"));
  CHECK_THAT(conversion_error(R"j({"type": "string", "pattern": "(?=a)"})j"),
             Contains("lookahead") && Contains("(in 'pattern' at #)"));
  CHECK_THAT(conversion_error(R"({"anyOf": [{"type": "string"}], "type": "string"})"),
             Contains("'type' beside 'anyOf'"));
}

TEST_CASE("invalid schemas are refused naming the keyword and location", "[json_schema]") {
  CHECK(conversion_error(R"({"type": 3})") ==
        "invalid JSON Schema: 'type' must be a string or a non-empty array of strings (at #)");
  CHECK(conversion_error(R"({"type": "strin"})") == "invalid JSON Schema: 'type' names an unknown type 'strin' (at #)");
  CHECK(conversion_error(R"({"type": "object", "properties": {"a": {}}, "required": "a"})") ==
        "invalid JSON Schema: 'required' must be an array of strings (at #)");
  CHECK(conversion_error(R"({"enum": []})") == "invalid JSON Schema: 'enum' must be a non-empty array (at #)");
  CHECK(conversion_error(R"({"properties": {"a": {"$ref": "#/$defs/missing"}}})") ==
        "invalid JSON Schema: '$ref' points to '#/$defs/missing', which is not in the schema (at #/properties/a)");
  CHECK(conversion_error(R"({"type": "array", "minItems": 5, "maxItems": 3})") ==
        "unsatisfiable JSON Schema: minItems 5 is greater than maxItems 3 (at #)");
  CHECK(conversion_error(R"({"type": "string", "maxLength": -1})") ==
        "invalid JSON Schema: 'maxLength' must be a non-negative integer (at #)");
}

TEST_CASE("unsatisfiable schemas are refused as such", "[json_schema]") {
  CHECK(conversion_error(R"({"type": "integer", "minimum": 5, "maximum": 3})") ==
        "unsatisfiable JSON Schema: no integer lies between its minimum and maximum (5 > 3 once exclusive bounds are "
        "applied) (at #)");
  CHECK_THAT(conversion_error(R"({"type": "integer", "exclusiveMinimum": 3, "exclusiveMaximum": 4})"),
             Contains("unsatisfiable"));
  CHECK(conversion_error(R"({"type": "number", "minimum": 5, "maximum": 3})") ==
        "unsatisfiable JSON Schema: no number lies between its bounds (at #)");
  CHECK(conversion_error(R"({"type": "string", "minLength": 3, "maxLength": 2})") ==
        "unsatisfiable JSON Schema: minLength 3 is greater than maxLength 2 (at #)");
  CHECK(conversion_error(R"({"properties": {"a": {"not": {"title": "anything"}}}, "required": ["a"]})") ==
        "unsatisfiable JSON Schema: 'not' of a schema that every value satisfies (at #/properties/a)");
  CHECK(conversion_error(R"({"type": "array", "prefixItems": [{}], "items": false, "minItems": 2})") ==
        "unsatisfiable JSON Schema: minItems 2 needs more items than the schema allows (at #)");
  CHECK(conversion_error(R"({"type": "integer", "enum": ["a", true]})") ==
        "unsatisfiable JSON Schema: no 'enum' value has the declared type (at #)");
  CHECK(conversion_error("false") == "unsatisfiable JSON Schema: the schema is false (at #)");
  CHECK(conversion_error(R"({"type": "object", "properties": {"a": false}, "required": ["a"]})") ==
        "unsatisfiable JSON Schema: the schema is false (at #/properties/a)");
  CHECK_THAT(conversion_error(R"({"anyOf": [false, {"type": "string", "minLength": 3, "maxLength": 2}]})"),
             Contains("unsatisfiable JSON Schema: no branch of 'anyOf' can be satisfied (at #/anyOf)"));
}

TEST_CASE("several schemas share one grammar with prefixed rules and helpers defined once", "[json_schema]") {
  JsonSchemaConverter converter;
  const std::string weather = converter.add(Json::parse(R"({"type": "object", "properties": {
      "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
      "required": ["city", "days"]})"),
                                            "get_weather");
  const std::string time = converter.add(Json::parse(R"({"type": "object", "properties": {
      "zone": {"type": "string"}}, "required": ["zone"]})"),
                                         "get_time");
  CHECK(weather == "get-weather");
  CHECK(time == "get-time");
  CHECK_THROWS_AS(converter.add(Json::parse(R"({"type": "strin"})"), "broken"), GrammarError);
  const std::string text = converter.grammar(weather + " | " + time);
  CHECK(text.starts_with("root ::= get-weather | get-time\n"));
  CHECK(text.find("\nstring ::= ") == text.rfind("\nstring ::= "));
  CHECK(text.find("\nspace ::= ") == text.rfind("\nspace ::= "));
  CHECK(text.find("broken") == std::string::npos);
  CHECK(text.find("get-weather-days ::= ") != std::string::npos);
  const Grammar g = Grammar::parse(text);
  CHECK(g.matches(R"({"city": "Oslo", "days": 3})"));
  CHECK(g.matches(R"({"zone": "UTC"})"));
  CHECK_FALSE(g.matches(R"({"city": "Oslo", "days": 8})"));
}

TEST_CASE("a helper name given to a schema does not clash with the helper", "[json_schema]") {
  JsonSchemaConverter converter;
  const std::string rule = converter.add(Json::parse(R"({"type": "string", "minLength": 1})"), "string");
  CHECK(rule == "string-1");
  const Grammar g = Grammar::parse(converter.grammar(rule));
  CHECK(g.matches(R"("a")"));
  CHECK_FALSE(g.matches(R"("")"));
}

TEST_CASE("the json_object grammar accepts any object and nothing else", "[json_schema]") {
  const Grammar g = Grammar::parse(json_object_gbnf());
  CHECK(g.matches("{}"));
  CHECK(g.matches(R"({"a": [1, 2.5e-3, "x", null, true, {"b": {}}]})"));
  for (const char* text : {"[]", "1", R"("s")", R"({"a"})", R"({"a": 1,})", R"({'a': 1})"})
    CHECK_FALSE(g.matches(text));
}
