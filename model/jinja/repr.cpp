// Python's repr() of floats and strings, the two layouts every other repr and tojson builds on.
#include <charconv>
#include <cmath>

#include "model/jinja/utf8.hpp"
#include "model/jinja/value.hpp"

namespace parley::jinja {

namespace {

bool non_printable(char32_t c) {
  const auto in = [c](char32_t a, char32_t b) { return c >= a && c <= b; };
  return in(0x80, 0xA0) || c == 0xAD || in(0x600, 0x605) || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x1680 ||
         c == 0x180E || in(0x2000, 0x200F) || in(0x2028, 0x202F) || in(0x205F, 0x2064) || in(0x2066, 0x206F) ||
         c == 0x3000 || in(0xD800, 0xF8FF) || c == 0xFEFF || in(0xFFF9, 0xFFFB) || c == 0xFFFE || c == 0xFFFF;
}

void append_hex(std::string& out, const char* prefix, char32_t c, int digits) {
  static const char* kHex = "0123456789abcdef";
  out += prefix;
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out.push_back(kHex[(c >> shift) & 0xF]);
}

}  // namespace

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, std::fabs(d), std::chars_format::scientific);
  const std::string_view scientific(buffer, result.ptr - buffer);  // D[.DDD]e(+|-)XX
  const std::size_t e = scientific.find('e');
  std::string digits;
  for (char c : scientific.substr(0, e))
    if (c != '.') digits.push_back(c);
  int exponent = 0;
  std::from_chars(scientific.data() + e + 2, scientific.data() + scientific.size(), exponent);
  if (scientific[e + 1] == '-') exponent = -exponent;
  const int point = exponent + 1;  // digits are 0.DDD x 10^point
  std::string out = d < 0 ? "-" : "";
  if (point > -4 && point <= 16) {
    const int n = static_cast<int>(digits.size());
    if (point <= 0)
      out += "0." + std::string(-point, '0') + digits;
    else if (point >= n)
      out += digits + std::string(point - n, '0') + ".0";
    else
      out += digits.substr(0, point) + "." + digits.substr(point);
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  out += exponent < 0 ? "e-" : "e+";
  if (std::abs(exponent) < 10) out += "0";
  return out + std::to_string(std::abs(exponent));
}

std::string repr_string(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const char quote = has_single && s.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : utf8::decode(s)) {
    if (c == static_cast<char32_t>(quote) || c == '\\')
      out += {'\\', static_cast<char>(c)};
    else if (c == '\t')
      out += "\\t";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20 || c == 0x7F)
      append_hex(out, "\\x", c, 2);
    else if (c >= 0x80 && non_printable(c))
      append_hex(out, c < 0x100 ? "\\x" : "\\u", c, c < 0x100 ? 2 : 4);
    else
      utf8::append(out, c);
  }
  return out + quote;
}

}  // namespace parley::jinja
