// Jinja2's tests (`x is defined`, `x is divisibleby 3`), with Python's isinstance answers: a bool is a
// number but not an integer, a dict is a sequence, an Undefined is iterable and callable.
#include <unordered_map>

#include "model/jinja/builtins.hpp"
#include "model/jinja/render.hpp"
#include "model/jinja/utf8.hpp"

namespace parley::jinja {

namespace {

const Value& argument(const CallArgs& args, std::string_view test) {
  if (args.positional.size() + args.keywords.size() != 1)
    fail("the test '" + std::string(test) + "' takes exactly one argument");
  return args.positional.empty() ? args.keywords.front().second : args.positional.front();
}

// True, or throws: the tests below read `return no_arguments(a, "x") && ...`.
bool no_arguments(const CallArgs& args, std::string_view test) {
  if (!args.positional.empty() || !args.keywords.empty())
    fail("the test '" + std::string(test) + "' takes no arguments");
  return true;
}

Value modulo(Renderer& renderer, const Value& v, const Value& divisor) {
  return binary_op(renderer, ast::BinaryOp::Mod, v, divisor);
}

bool test_defined(Renderer&, const Value& v, CallArgs& a) { return no_arguments(a, "defined") && !v.is_undefined(); }
bool test_undefined(Renderer&, const Value& v, CallArgs& a) { return no_arguments(a, "undefined") && v.is_undefined(); }
bool test_none(Renderer&, const Value& v, CallArgs& a) { return no_arguments(a, "none") && v.is_none(); }
bool test_boolean(Renderer&, const Value& v, CallArgs& a) { return no_arguments(a, "boolean") && v.kind == Kind::Bool; }
bool test_true(Renderer&, const Value& v, CallArgs& a) {
  return no_arguments(a, "true") && v.kind == Kind::Bool && v.integer;
}
bool test_false(Renderer&, const Value& v, CallArgs& a) {
  return no_arguments(a, "false") && v.kind == Kind::Bool && !v.integer;
}
bool test_integer(Renderer&, const Value& v, CallArgs& a) { return no_arguments(a, "integer") && v.kind == Kind::Int; }
bool test_float(Renderer&, const Value& v, CallArgs& a) { return no_arguments(a, "float") && v.kind == Kind::Float; }
bool test_number(Renderer&, const Value& v, CallArgs& a) { return no_arguments(a, "number") && v.is_number(); }
bool test_string(Renderer&, const Value& v, CallArgs& a) { return no_arguments(a, "string") && v.is_string(); }
bool test_mapping(Renderer&, const Value& v, CallArgs& a) { return no_arguments(a, "mapping") && v.is_dict(); }
bool test_escaped(Renderer&, const Value& v, CallArgs& a) {
  return no_arguments(a, "escaped") && v.is_string() && v.markup;
}

bool test_sequence(Renderer&, const Value& v, CallArgs& a) {
  no_arguments(a, "sequence");
  if (v.is_list()) return v.seq_kind() == SeqKind::List || v.seq_kind() == SeqKind::Tuple;
  return v.is_string() || v.is_dict() || v.is_undefined();
}

bool test_iterable(Renderer&, const Value& v, CallArgs& a) {
  no_arguments(a, "iterable");
  return v.is_list() || v.is_string() || v.is_dict() || v.is_undefined() ||
         (v.kind == Kind::Object && v.object->type_name() == "LoopContext");
}

bool test_callable(Renderer&, const Value& v, CallArgs& a) {
  no_arguments(a, "callable");
  return v.is_undefined() || (v.kind == Kind::Object && v.object->is_callable());
}

bool test_odd(Renderer& r, const Value& v, CallArgs& a) {
  no_arguments(a, "odd");
  return equals(modulo(r, v, Value::of_int(2)), Value::of_int(1));
}
bool test_even(Renderer& r, const Value& v, CallArgs& a) {
  no_arguments(a, "even");
  return equals(modulo(r, v, Value::of_int(2)), Value::of_int(0));
}
bool test_divisibleby(Renderer& r, const Value& v, CallArgs& a) {
  return equals(modulo(r, v, argument(a, "divisibleby")), Value::of_int(0));
}

bool test_lower(Renderer&, const Value& v, CallArgs& a) {
  no_arguments(a, "lower");
  bool any = false;
  for (char32_t c : utf8::decode(to_str(v))) {
    if (!utf8::is_cased(c)) continue;
    if (utf8::to_lower(c) != c) return false;
    any = true;
  }
  return any;
}
bool test_upper(Renderer&, const Value& v, CallArgs& a) {
  no_arguments(a, "upper");
  bool any = false;
  for (char32_t c : utf8::decode(to_str(v))) {
    if (!utf8::is_cased(c)) continue;
    if (utf8::to_upper(c) != c) return false;
    any = true;
  }
  return any;
}

// Python's `is`: the same object for containers, the same value for the small immutable ones.
bool test_sameas(Renderer&, const Value& v, CallArgs& a) {
  const Value& other = argument(a, "sameas");
  if (v.kind != other.kind) return false;
  switch (v.kind) {
    case Kind::List:
      return v.list == other.list;
    case Kind::Dict:
      return v.dict == other.dict;
    case Kind::Object:
      return v.object == other.object;
    default:
      return equals(v, other);
  }
}

bool test_in(Renderer&, const Value& v, CallArgs& a) { return contains(argument(a, "in"), v); }
bool test_eq(Renderer&, const Value& v, CallArgs& a) { return equals(v, argument(a, "eq")); }
bool test_ne(Renderer&, const Value& v, CallArgs& a) { return !equals(v, argument(a, "ne")); }
bool test_lt(Renderer&, const Value& v, CallArgs& a) { return compare(v, argument(a, "lt"), "<"); }
bool test_le(Renderer&, const Value& v, CallArgs& a) { return compare(v, argument(a, "le"), "<="); }
bool test_gt(Renderer&, const Value& v, CallArgs& a) { return compare(v, argument(a, "gt"), ">"); }
bool test_ge(Renderer&, const Value& v, CallArgs& a) { return compare(v, argument(a, "ge"), ">="); }

bool test_filter(Renderer&, const Value& v, CallArgs& a) {
  no_arguments(a, "filter");
  return v.is_string() && find_filter(v.text) != nullptr;
}
bool test_test(Renderer&, const Value& v, CallArgs& a) {
  no_arguments(a, "test");
  return v.is_string() && find_test(v.text) != nullptr;
}

}  // namespace

TestFunction find_test(std::string_view name) {
  // clang-format off
  static const std::unordered_map<std::string_view, TestFunction> kTests = {
      {"odd", test_odd}, {"even", test_even}, {"divisibleby", test_divisibleby}, {"defined", test_defined},
      {"undefined", test_undefined}, {"filter", test_filter}, {"test", test_test}, {"none", test_none},
      {"boolean", test_boolean}, {"false", test_false}, {"true", test_true}, {"integer", test_integer},
      {"float", test_float}, {"lower", test_lower}, {"upper", test_upper}, {"string", test_string},
      {"mapping", test_mapping}, {"number", test_number}, {"sequence", test_sequence}, {"iterable", test_iterable},
      {"callable", test_callable}, {"sameas", test_sameas}, {"escaped", test_escaped}, {"in", test_in},
      {"==", test_eq}, {"eq", test_eq}, {"equalto", test_eq}, {"!=", test_ne}, {"ne", test_ne},
      {">", test_gt}, {"gt", test_gt}, {"greaterthan", test_gt}, {"ge", test_ge}, {">=", test_ge},
      {"<", test_lt}, {"lt", test_lt}, {"lessthan", test_lt}, {"<=", test_le}, {"le", test_le}};
  // clang-format on
  const auto found = kTests.find(name);
  return found == kTests.end() ? nullptr : found->second;
}

}  // namespace parley::jinja
