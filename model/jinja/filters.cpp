// Text and number filters, and the filter table. Strings are Python's str(): a filter that Jinja2 runs through
// soft_str keeps a Markup input Markup (upper, trim, string), one that calls str() drops it (replace, title).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "model/jinja/filters.hpp"
#include "model/jinja/text.hpp"
#include "model/jinja/utf8.hpp"

namespace parley::jinja {

namespace {

Value soft_string(const Value& v) { return v.is_string() ? v : Value::string(to_str(v)); }

// `width` spaces, charged before they are made: indent(10**12) stops at the step limit, not in the allocator.
std::string spaces(Renderer& renderer, std::int64_t width) {
  const auto n = static_cast<std::size_t>(std::max<std::int64_t>(0, width));
  renderer.charge_for_size(n);
  return std::string(n, ' ');
}

// Python's int(text, base) for bases 2, 8, 10, 16: whitespace, a sign, a matching prefix, digits with single
// underscores between them.
std::optional<std::int64_t> parse_int(const std::string& text, int base) {
  const std::string s = text::strip(text, std::nullopt, true, true);
  std::size_t i = 0;
  const bool negative = i < s.size() && s[i] == '-';
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  if (base != 10 && i + 1 < s.size() && s[i] == '0') {
    const char p = static_cast<char>(std::tolower(s[i + 1]));
    if ((base == 16 && p == 'x') || (base == 8 && p == 'o') || (base == 2 && p == 'b')) i += 2;
    if (i < s.size() && s[i] == '_') ++i;
  }
  std::string digits;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    const int d = std::isdigit(static_cast<unsigned char>(c))   ? c - '0'
                  : std::isalpha(static_cast<unsigned char>(c)) ? std::tolower(c) - 'a' + 10
                                                                : -1;
    if (c == '_' && !digits.empty() && i + 1 < s.size() && s[i + 1] != '_') continue;
    if (d < 0 || d >= base) return std::nullopt;
    digits.push_back(c);
  }
  if (digits.empty()) return std::nullopt;
  errno = 0;
  const long long value = std::strtoll(digits.c_str(), nullptr, base);
  if (errno == ERANGE) fail("integer overflow: '" + text + "' does not fit in 64 bits");
  return negative ? -value : value;
}

// Python's float(text): [digits][.digits][e[+-]digits] with single underscores between digits, or inf,
// infinity and nan, surrounded by whitespace.
std::optional<double> parse_float(const std::string& text) {
  const std::string s = text::strip(text, std::nullopt, true, true);
  const bool negative = !s.empty() && s[0] == '-';
  const std::string body = !s.empty() && (s[0] == '+' || s[0] == '-') ? s.substr(1) : s;
  const std::string word = utf8::lower(body);
  if (word == "inf" || word == "infinity") return negative ? -HUGE_VAL : HUGE_VAL;
  if (word == "nan") return std::nan("");
  std::string clean;
  std::size_t i = 0;
  const auto is_digit = [&](std::size_t k) {
    return k < body.size() && std::isdigit(static_cast<unsigned char>(body[k]));
  };
  const auto digits = [&] {
    bool any = false;
    while (i < body.size()) {
      if (is_digit(i))
        clean.push_back(body[i++]), any = true;
      else if (body[i] == '_' && any && is_digit(i + 1))
        ++i;
      else
        break;
    }
    return any;
  };
  bool mantissa = digits();
  if (i < body.size() && body[i] == '.') {
    clean.push_back(body[i++]);
    mantissa = digits() || mantissa;
  }
  if (!mantissa) return std::nullopt;
  if (i < body.size() && (body[i] == 'e' || body[i] == 'E')) {
    clean.push_back(body[i++]);
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) clean.push_back(body[i++]);
    if (!digits()) return std::nullopt;
  }
  if (i != body.size()) return std::nullopt;
  const double value = std::strtod(clean.c_str(), nullptr);
  return negative ? -value : value;
}

std::int64_t float_to_int(double d) {
  if (std::isinf(d)) fail("cannot convert float infinity to integer");
  if (d >= 9.2233720368547758e18 || d < -9.2233720368547758e18)
    fail("integer overflow: the value does not fit in 64 bits");
  return static_cast<std::int64_t>(d);
}

Value filter_int(Renderer&, const Value& v, CallArgs& args) {
  const BoundArgs a("int", args, {"default", "base"});
  const int base = a.given(1) ? static_cast<int>(to_index(a.get(1), "base")) : 10;
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_integral()) return Value::of_int(v.integer);
  if (v.kind == Kind::Float && !std::isnan(v.real)) return Value::of_int(float_to_int(v.real));
  if (v.is_string()) {
    if (base != 2 && base != 8 && base != 10 && base != 16)
      fail("int() base other than 2, 8, 10 or 16 is not supported");
    if (auto i = parse_int(v.text, base)) return Value::of_int(*i);
    if (auto d = parse_float(v.text); d && !std::isnan(*d)) return Value::of_int(float_to_int(*d));
  }
  return a.get_or(0, Value::of_int(0));
}

Value filter_float(Renderer&, const Value& v, CallArgs& args) {
  const BoundArgs a("float", args, {"default"});
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_number()) return Value::of_float(v.as_double());
  if (v.is_string())
    if (auto d = parse_float(v.text)) return Value::of_float(*d);
  return a.get_or(0, Value::of_float(0.0));
}

Value filter_abs(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("abs", args, {});
  if (v.kind == Kind::Float) return Value::of_float(std::fabs(v.real));
  if (!v.is_integral()) fail("bad operand type for abs(): '" + type_name(v) + "'");
  if (v.integer == INT64_MIN) fail("integer overflow: the value does not fit in 64 bits");
  return Value::of_int(v.integer < 0 ? -v.integer : v.integer);
}

// Python's round(x, n): glibc's printf rounds the exact binary value half to even, as CPython's dtoa does.
double round_float(double x, std::int64_t digits) {
  if (!std::isfinite(x) || digits > 300) return x;
  if (digits < 0) {
    const double scale = std::pow(10.0, static_cast<double>(-digits));
    return std::nearbyint(x / scale) * scale;
  }
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, "%.*f", static_cast<int>(std::min<std::int64_t>(digits, 100)), x);
  return std::strtod(buffer, nullptr);
}

Value filter_round(Renderer&, const Value& v, CallArgs& args) {
  const BoundArgs a("round", args, {"precision", "method"});
  const std::int64_t precision = a.given(0) ? to_index(a.get(0), "precision") : 0;
  const std::string method = a.given(1) ? to_str(a.get(1)) : "common";
  if (method != "common" && method != "ceil" && method != "floor") fail("method must be common, ceil or floor");
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) fail("type " + type_name(v) + " doesn't define __round__ method");
  if (method == "common") {
    if (v.is_integral() && precision >= 0) return Value::of_int(v.integer);
    return Value::of_float(round_float(v.as_double(), precision));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double scaled = v.as_double() * scale;
  return Value::of_float((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

Value filter_default(Renderer&, const Value& v, CallArgs& args) {
  const BoundArgs a("default", args, {"default_value", "boolean"});
  if (v.is_undefined() || (truthy(a.get(1)) && !truthy(v))) return a.get_or(0, Value::string(""));
  return v;
}

Value filter_length(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("length", args, {});
  return Value::of_int(length(v));
}

Value filter_string(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("string", args, {});
  return soft_string(v);
}

Value filter_safe(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("safe", args, {});
  return Value::string(to_str(v), true);
}

Value filter_escape(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("escape", args, {});
  if (v.is_string() && v.markup) return v;
  return Value::string(escape_html(to_str(v)), true);
}

Value filter_forceescape(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("forceescape", args, {});
  return Value::string(escape_html(to_str(v)), true);
}

Value filter_upper(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("upper", args, {});
  const Value s = soft_string(v);
  return Value::string(utf8::upper(s.text), s.markup);
}

Value filter_lower(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("lower", args, {});
  const Value s = soft_string(v);
  return Value::string(utf8::lower(s.text), s.markup);
}

Value filter_capitalize(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("capitalize", args, {});
  const Value s = soft_string(v);
  return Value::string(text::capitalize(s.text), s.markup);
}

// Jinja2's title: a word starts after - ( { [ < or whitespace, not after an apostrophe as str.title would.
Value filter_title(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("title", args, {});
  std::string out;
  bool word_start = true;
  for (char32_t c : utf8::decode(to_str(v))) {
    utf8::append(out, word_start ? utf8::to_upper(c) : utf8::to_lower(c));
    word_start = utf8::is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
  }
  return Value::string(std::move(out));
}

Value filter_trim(Renderer&, const Value& v, CallArgs& args) {
  const BoundArgs a("trim", args, {"chars"});
  const Value s = soft_string(v);
  std::optional<std::string> chars;
  if (a.given(0) && !a.get(0).is_none()) chars = to_str(a.get(0));
  return Value::string(text::strip(s.text, chars, true, true), s.markup);
}

Value filter_replace(Renderer& renderer, const Value& v, CallArgs& args) {
  const BoundArgs a("replace", args, {"old", "new", "count"});
  const long count = a.given(2) && !a.get(2).is_none() ? to_index(a.get(2), "count") : -1;
  const std::string s = to_str(v), old_text = to_str(a.get(0)), new_text = to_str(a.get(1));
  charge_for_replace(renderer, s, old_text, new_text);
  return Value::string(text::replace(s, old_text, new_text, count));
}

Value filter_center(Renderer& renderer, const Value& v, CallArgs& args) {
  const BoundArgs a("center", args, {"width"});
  const long width = a.given(0) ? to_index(a.get(0), "width") : 80;
  renderer.charge_for_size(static_cast<std::size_t>(std::max(0L, width)));
  const Value s = soft_string(v);
  return Value::string(text::pad(s.text, width, ' ', '^'), s.markup);
}

Value filter_indent(Renderer& renderer, const Value& v, CallArgs& args) {
  const BoundArgs a("indent", args, {"width", "first", "blank"});
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_string()) fail("unsupported operand type(s) for +=: '" + type_name(v) + "' and 'str'");
  std::string indention;
  const Value width = a.get_or(0, Value::of_int(4));
  if (width.is_string())
    indention = width.text;
  else
    indention = spaces(renderer, to_index(width, "width"));
  renderer.charge_for_size(indention.size() * (1 + std::count(v.text.begin(), v.text.end(), '\n')));
  const std::vector<std::string> lines = text::split_lines(v.text + "\n", false);
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    const bool indented = truthy(a.get(2)) ? i > 0 : i > 0 && !lines[i].empty();
    if (indented) out += indention;
    out += lines[i];
  }
  if (truthy(a.get(1))) out = indention + out;
  return Value::string(std::move(out), v.markup);
}

Value filter_wordcount(Renderer&, const Value& v, CallArgs& args) {
  BoundArgs("wordcount", args, {});
  std::int64_t words = 0;
  bool in_word = false;
  for (char32_t c : utf8::decode(to_str(v))) {
    const bool word_char = utf8::is_alpha(c) || utf8::is_digit(c) || c == '_';
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value::of_int(words);
}

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Value filter_tojson(Renderer& renderer, const Value& v, CallArgs& args) {
  const BoundArgs a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonStyle style;
  style.ensure_ascii = truthy(a.get(0));
  style.sort_keys = truthy(a.get(3));
  const Value& indent = a.get(1);
  if (a.given(1) && !indent.is_none()) {
    if (indent.is_string())
      style.indent = indent.text;
    else
      style.indent = spaces(renderer, to_index(indent, "indent"));
    style.item_separator = ",";
  }
  if (a.given(2) && !a.get(2).is_none()) {
    const std::vector<Value> separators = iterate(a.get(2));
    if (separators.size() != 2 || !separators[0].is_string() || !separators[1].is_string())
      fail("separators must be a pair of strings");
    style.item_separator = separators[0].text;
    style.key_separator = separators[1].text;
  }
  std::string out = dump_json(v, style);
  renderer.charge_for_size(out.size());
  return Value::string(std::move(out));
}

Value filter_attr(Renderer& renderer, const Value& v, CallArgs& args) {
  const BoundArgs a("attr", args, {"name"});
  if (!a.get(0).is_string()) fail("attribute name must be string");
  if (v.is_undefined()) fail_undefined(v);
  if (v.kind == Kind::Object)
    if (auto attribute = v.object->attribute(a.get(0).text)) return *attribute;
  if (auto attribute = builtin_attribute(v, a.get(0).text)) return *attribute;
  return Value::undefined(repr_string(object_type_repr(v)) + " has no attribute " + repr(a.get(0)));
}

template <const char* kName>
Value not_supported(Renderer&, const Value&, CallArgs&) {
  fail(std::string("the filter '") + kName + "' is not supported");
}

// clang-format off
constexpr char kFileSizeFormat[] = "filesizeformat", kFormat[] = "format", kGroupBy[] = "groupby",
               kPprint[] = "pprint", kRandom[] = "random", kStripTags[] = "striptags", kTruncate[] = "truncate",
               kUrlEncode[] = "urlencode", kUrlize[] = "urlize", kWordWrap[] = "wordwrap", kXmlAttr[] = "xmlattr";
// clang-format on

}  // namespace

FilterFunction find_filter(std::string_view name) {
  using namespace filters;
  // clang-format off
  static const std::unordered_map<std::string_view, FilterFunction> kFilters = {
      {"abs", filter_abs}, {"attr", filter_attr}, {"batch", batch}, {"capitalize", filter_capitalize},
      {"center", filter_center}, {"count", filter_length}, {"d", filter_default}, {"default", filter_default},
      {"dictsort", dictsort}, {"e", filter_escape}, {"escape", filter_escape}, {"first", first},
      {"float", filter_float}, {"forceescape", filter_forceescape}, {"indent", filter_indent}, {"int", filter_int},
      {"items", items}, {"join", join}, {"last", last}, {"length", filter_length}, {"list", list},
      {"lower", filter_lower}, {"map", map}, {"max", max}, {"min", min}, {"reject", reject},
      {"rejectattr", rejectattr}, {"replace", filter_replace}, {"reverse", reverse}, {"round", filter_round},
      {"safe", filter_safe}, {"select", select}, {"selectattr", selectattr}, {"slice", slice}, {"sort", sort},
      {"string", filter_string}, {"sum", sum}, {"title", filter_title}, {"tojson", filter_tojson},
      {"trim", filter_trim}, {"unique", unique}, {"upper", filter_upper}, {"wordcount", filter_wordcount},
      {"filesizeformat", not_supported<kFileSizeFormat>}, {"format", not_supported<kFormat>},
      {"groupby", not_supported<kGroupBy>}, {"pprint", not_supported<kPprint>}, {"random", not_supported<kRandom>},
      {"striptags", not_supported<kStripTags>}, {"truncate", not_supported<kTruncate>},
      {"urlencode", not_supported<kUrlEncode>}, {"urlize", not_supported<kUrlize>},
      {"wordwrap", not_supported<kWordWrap>}, {"xmlattr", not_supported<kXmlAttr>}};
  // clang-format on
  const auto found = kFilters.find(name);
  return found == kFilters.end() ? nullptr : found->second;
}

}  // namespace parley::jinja
