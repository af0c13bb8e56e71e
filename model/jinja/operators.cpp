// Python's arithmetic on the engine's values: int stays int (an overflow past 64 bits is an error here, where
// Python would grow), / gives a float, // and % round toward negative infinity, + and * also join and repeat
// strings and lists, and a Markup operand HTML-escapes the plain one.
#include <climits>
#include <cmath>

#include "model/jinja/builtins.hpp"
#include "model/jinja/render.hpp"
#include "model/jinja/utf8.hpp"

namespace parley::jinja {

namespace {

const char* symbol(ast::BinaryOp op) {
  switch (op) {
    case ast::BinaryOp::Add:
      return "+";
    case ast::BinaryOp::Sub:
      return "-";
    case ast::BinaryOp::Mul:
      return "*";
    case ast::BinaryOp::Div:
      return "/";
    case ast::BinaryOp::FloorDiv:
      return "//";
    case ast::BinaryOp::Mod:
      return "%";
    case ast::BinaryOp::Pow:
      return "** or pow()";
  }
  return "?";
}

[[noreturn]] void unsupported(ast::BinaryOp op, const Value& a, const Value& b) {
  fail(std::string("unsupported operand type(s) for ") + symbol(op) + ": '" + type_name(a) + "' and '" + type_name(b) +
       "'");
}

[[noreturn]] void overflow() { fail("integer overflow: the result does not fit in 64 bits"); }

// CPython's float divmod: the floor quotient and a remainder with the divisor's sign.
std::pair<double, double> float_divmod(double x, double y) {
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0) {
    if ((y < 0) != (mod < 0)) {
      mod += y;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, y);
  }
  double floor_div;
  if (div != 0) {
    floor_div = std::floor(div);
    if (div - floor_div > 0.5) floor_div += 1.0;
  } else {
    floor_div = std::copysign(0.0, x / y);
  }
  return {floor_div, mod};
}

Value integer_power(std::int64_t base, std::int64_t exponent) {
  std::int64_t result = 1;
  while (exponent > 0) {
    if (exponent & 1)
      if (__builtin_mul_overflow(result, base, &result)) overflow();
    exponent >>= 1;
    if (exponent > 0 && __builtin_mul_overflow(base, base, &base)) overflow();
  }
  return Value::of_int(result);
}

// s * n and list * n, charged by the size they would have before they are made.
Value repeat(Renderer& renderer, const Value& sequence, std::int64_t count) {
  const std::size_t times = count > 0 ? static_cast<std::size_t>(count) : 0;
  const std::size_t unit = sequence.is_string() ? sequence.text.size() : sequence.items().size();
  std::size_t total = 0;
  if (__builtin_mul_overflow(unit, times, &total)) renderer.count_steps(LONG_MAX / 2);
  if (sequence.is_string()) {
    renderer.charge_for_size(total);
    std::string out;
    out.reserve(total);
    for (std::size_t i = 0; i < times; ++i) out += sequence.text;
    return Value::string(std::move(out), sequence.markup);
  }
  renderer.count_steps(static_cast<long>(std::min<std::size_t>(total, LONG_MAX / 2)));
  std::vector<Value> out;
  out.reserve(total);
  for (std::size_t i = 0; i < times; ++i) out.insert(out.end(), sequence.items().begin(), sequence.items().end());
  return Value::sequence(std::move(out), sequence.seq_kind());
}

bool is_repeatable(const Value& v) {
  return v.is_string() || (v.is_list() && (v.seq_kind() == SeqKind::List || v.seq_kind() == SeqKind::Tuple));
}

Value add(Renderer& renderer, const Value& a, const Value& b) {
  if (a.is_string() && b.is_string()) {
    renderer.charge_for_size(a.text.size() + b.text.size());
    if (!a.markup && !b.markup) return Value::string(a.text + b.text);
    return Value::string((a.markup ? a.text : escape_html(a.text)) + (b.markup ? b.text : escape_html(b.text)), true);
  }
  if (a.is_list() && b.is_list() && a.seq_kind() == b.seq_kind() && is_repeatable(a)) {
    renderer.count_steps(static_cast<long>(a.items().size() + b.items().size()));
    std::vector<Value> items = a.items();
    items.insert(items.end(), b.items().begin(), b.items().end());
    return Value::sequence(std::move(items), a.seq_kind());
  }
  if (a.is_list() && (a.seq_kind() == SeqKind::List || a.seq_kind() == SeqKind::Tuple))
    fail("can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " + type_name(a));
  if (a.is_string() && !b.is_string()) fail("can only concatenate str (not \"" + type_name(b) + "\") to str");
  unsupported(ast::BinaryOp::Add, a, b);
}

}  // namespace

Value binary_op(Renderer& renderer, ast::BinaryOp op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  using ast::BinaryOp;
  if (!a.is_number() || !b.is_number()) {
    if (op == BinaryOp::Add) return add(renderer, a, b);
    if (op == BinaryOp::Mul && is_repeatable(a) && b.is_integral()) return repeat(renderer, a, b.integer);
    if (op == BinaryOp::Mul && a.is_integral() && is_repeatable(b)) return repeat(renderer, b, a.integer);
    if (op == BinaryOp::Mod && a.is_string()) fail("printf-style string formatting (str % values) is not supported");
    unsupported(op, a, b);
  }
  const bool integers = a.is_integral() && b.is_integral();
  const std::int64_t x = a.integer, y = b.integer;
  const double fx = a.as_double(), fy = b.as_double();
  std::int64_t result = 0;
  switch (op) {
    case BinaryOp::Add:
      if (!integers) return Value::of_float(fx + fy);
      if (__builtin_add_overflow(x, y, &result)) overflow();
      return Value::of_int(result);
    case BinaryOp::Sub:
      if (!integers) return Value::of_float(fx - fy);
      if (__builtin_sub_overflow(x, y, &result)) overflow();
      return Value::of_int(result);
    case BinaryOp::Mul:
      if (!integers) return Value::of_float(fx * fy);
      if (__builtin_mul_overflow(x, y, &result)) overflow();
      return Value::of_int(result);
    case BinaryOp::Div:
      if (fy == 0) fail(integers ? "division by zero" : "float division by zero");
      return Value::of_float(fx / fy);
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod:
      if (integers) {
        if (y == 0) fail(op == BinaryOp::FloorDiv ? "integer division or modulo by zero" : "integer modulo by zero");
        if (x == INT64_MIN && y == -1) overflow();
        std::int64_t quotient = x / y, remainder = x % y;
        if (remainder != 0 && ((remainder < 0) != (y < 0))) {  // Python rounds toward negative infinity
          quotient -= 1;
          remainder += y;
        }
        return Value::of_int(op == BinaryOp::FloorDiv ? quotient : remainder);
      }
      if (fy == 0) fail(op == BinaryOp::FloorDiv ? "float floor division by zero" : "float modulo");
      return Value::of_float(op == BinaryOp::FloorDiv ? float_divmod(fx, fy).first : float_divmod(fx, fy).second);
    case BinaryOp::Pow:
      if (integers && y >= 0) return integer_power(x, y);
      if (fx == 0 && fy < 0) fail("0.0 cannot be raised to a negative power");
      if (fx < 0 && fy != std::floor(fy)) fail("a negative number to a fractional power is complex: not supported");
      return Value::of_float(std::pow(fx, fy));
  }
  unsupported(op, a, b);
}

Value negate(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.kind == Kind::Float) return Value::of_float(-v.real);
  if (!v.is_integral()) fail("bad operand type for unary -: '" + type_name(v) + "'");
  if (v.integer == INT64_MIN) overflow();
  return Value::of_int(-v.integer);
}

Value unary_plus(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.kind == Kind::Float) return v;
  if (!v.is_integral()) fail("bad operand type for unary +: '" + type_name(v) + "'");
  return Value::of_int(v.integer);
}

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::optional<Value> slice(const Value& object, const Value& start_value, const Value& stop_value,
                           const Value& step_value) {
  const bool sequence = object.is_list() && (object.seq_kind() == SeqKind::List || object.seq_kind() == SeqKind::Tuple);
  if (!object.is_string() && !sequence) return std::nullopt;
  for (const Value* part : {&start_value, &stop_value, &step_value})
    if (!part->is_none() && !part->is_integral()) return std::nullopt;
  const std::int64_t step = step_value.is_none() ? 1 : step_value.integer;
  if (step == 0) fail("slice step cannot be zero");
  std::u32string chars;
  if (object.is_string()) chars = utf8::decode(object.text);
  const auto size = static_cast<std::int64_t>(object.is_string() ? chars.size() : object.items().size());
  // CPython's PySlice_AdjustIndices.
  const auto adjust = [&](const Value& v, std::int64_t fallback) {
    if (v.is_none()) return fallback;
    std::int64_t i = v.integer;
    if (i < 0) {
      i += size;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= size) {
      i = step < 0 ? size - 1 : size;
    }
    return i;
  };
  const std::int64_t start = adjust(start_value, step < 0 ? size - 1 : 0);
  const std::int64_t stop = adjust(stop_value, step < 0 ? -1 : size);
  std::vector<std::int64_t> indices;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop;) {
    indices.push_back(i);
    if (__builtin_add_overflow(i, step, &i)) break;
  }
  if (object.is_string()) {
    std::u32string out;
    for (std::int64_t i : indices) out.push_back(chars[i]);
    return Value::string(utf8::encode(out), object.markup);
  }
  std::vector<Value> out;
  for (std::int64_t i : indices) out.push_back(object.items()[i]);
  return Value::sequence(std::move(out), object.seq_kind());
}

std::int64_t to_index(const Value& v, std::string_view what) {
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_integral())
    fail("'" + type_name(v) + "' object cannot be interpreted as an integer (" + std::string(what) + ")");
  return v.integer;
}

}  // namespace parley::jinja
