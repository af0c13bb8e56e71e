// What templates call by name: filters, tests, globals, the methods of str/dict/list, operators, and JSON.
#pragma once
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/jinja/ast.hpp"
#include "model/jinja/value.hpp"

namespace parley::jinja {

struct Scope;
struct Options;

// Null when Jinja2 has no filter (test) of that name either. A Jinja2 filter this engine lacks raises
// "filter 'x' is not supported" when used.
FilterFunction find_filter(std::string_view name);  // filters.cpp, filters_sequence.cpp
TestFunction find_test(std::string_view name);      // is_tests.cpp

std::shared_ptr<Scope> make_globals(const Options& options);  // range, namespace, dict, raise_exception, strftime_now

// A Python attribute of a str, dict, list or tuple (a bound method), the unsafe-attribute Undefined of the
// sandbox for mutating methods (list.append, dict.update), or nullopt (methods.cpp).
std::optional<Value> builtin_attribute(const Value& self, std::string_view name);
Value call_method(Renderer& renderer, const Value& self, std::string_view name, CallArgs& args);
std::string format_string(Renderer& renderer, std::string_view format, CallArgs& args);  // str.format
// Charges the longest text s.replace(old, new) can make, before it is made.
void charge_for_replace(Renderer& renderer, std::string_view s, std::string_view old_text, std::string_view new_text);

// Python's operators (operators.cpp).
Value binary_op(Renderer& renderer, ast::BinaryOp op, const Value& a, const Value& b);
Value negate(const Value& v);
Value unary_plus(const Value& v);
std::string escape_html(std::string_view text);  // markupsafe.escape
// Python's slice of a list, tuple or str; nullopt where Python raises TypeError (Jinja2 then yields Undefined).
std::optional<Value> slice(const Value& object, const Value& start, const Value& stop, const Value& step);

// json.dumps(v, ensure_ascii, indent, separators, sort_keys), as transformers' tojson calls it (json.cpp).
struct JsonStyle {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // null: one line
  std::string item_separator = ", ", key_separator = ": ";
  bool sort_keys = false;
};
std::string dump_json(const Value& v, const JsonStyle& style);
Value from_json(const nlohmann::ordered_json& json);

// Binds a call's arguments to a Python signature: parameters by position, then by keyword.
class BoundArgs {
 public:
  BoundArgs(std::string_view function, const CallArgs& args, std::initializer_list<std::string_view> parameters);
  bool given(std::size_t i) const { return values_[i].has_value(); }
  const Value& get(std::size_t i) const;  // an Undefined if not given
  Value get_or(std::size_t i, Value fallback) const { return given(i) ? *values_[i] : std::move(fallback); }

 private:
  std::vector<std::optional<Value>> values_;
};

std::int64_t to_index(const Value& v, std::string_view what);  // an integral argument, else TypeError

}  // namespace parley::jinja
