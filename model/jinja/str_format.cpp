// str.format as the sandbox's formatter runs it: {} {0} {name}, .attribute and [key] through the sandbox's
// lookups, !s !r conversions, and the common format specs ([[fill]align][sign][0][width][.precision][type]).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "model/jinja/builtins.hpp"
#include "model/jinja/render.hpp"
#include "model/jinja/text.hpp"
#include "model/jinja/utf8.hpp"

namespace parley::jinja {

namespace {

struct Spec {
  char32_t fill = ' ';
  char align = '\0';
  char sign = '-';
  long width = -1, precision = -1;
  char type = '\0';
};

bool is_align(char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; }

Spec parse_spec(std::string_view spec_text) {
  const std::u32string s = utf8::decode(spec_text);
  Spec spec;
  std::size_t i = 0;
  if (s.size() >= 2 && is_align(s[1])) {  // a fill character, then the alignment
    spec.fill = s[0];
    spec.align = static_cast<char>(s[1]);
    i = 2;
  } else if (!s.empty() && is_align(s[0])) {
    spec.align = static_cast<char>(s[0]);
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = static_cast<char>(s[i++]);
  if (i < s.size() && s[i] == '0') {
    if (!spec.align) {  // zero padding goes after the sign
      spec.fill = '0';
      spec.align = '=';
    }
    ++i;
  }
  const auto number = [&] {
    long n = 0;
    while (i < s.size() && utf8::is_digit(s[i]) && n < 1'000'000) n = n * 10 + (s[i++] - '0');
    return n;
  };
  if (i < s.size() && utf8::is_digit(s[i])) spec.width = number();
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (i == s.size() || !utf8::is_digit(s[i])) fail("Format specifier missing precision");
    spec.precision = number();
  }
  if (i < s.size() && s[i] < 0x80) spec.type = static_cast<char>(s[i++]);
  if (i != s.size()) fail("the format spec '" + std::string(spec_text) + "' is not supported");
  return spec;
}

std::string format_number(const Value& v, const Spec& spec) {
  const char type = spec.type ? spec.type : (v.kind == Kind::Float ? 'r' : 'd');
  std::string digits;
  const bool negative = v.kind == Kind::Float ? std::signbit(v.real) : v.integer < 0;
  char buffer[512];
  if (type == 'd' && v.is_integral()) {
    digits = std::to_string(v.integer);
    if (negative) digits.erase(0, 1);
  } else if (type == 'r') {
    digits = format_float(std::fabs(v.real));
  } else if (type == 'f' || type == 'F' || type == 'e' || type == 'E' || type == 'g' || type == 'G' || type == '%') {
    const double d = std::fabs(v.as_double()) * (type == '%' ? 100 : 1);
    const char conversion = type == '%' ? 'f' : type;
    const char format[] = {'%', '.', '*', conversion, '\0'};
    std::snprintf(buffer, sizeof buffer, format,
                  static_cast<int>(std::min(spec.precision < 0 ? 6L : spec.precision, 100L)), d);
    digits = buffer;
    if (type == '%') digits += "%";
  } else {
    fail(std::string("unknown format code '") + type + "' for object of type '" + type_name(v) + "'");
  }
  const std::string sign = negative ? "-" : spec.sign == '+' ? "+" : spec.sign == ' ' ? " " : "";
  if (spec.align == '=') {
    std::string fill_text;
    utf8::append(fill_text, spec.fill);
    std::string out = sign;
    for (long n = static_cast<long>(sign.size() + digits.size()); n < spec.width; ++n) out += fill_text;
    return out + digits;
  }
  return text::pad(sign + digits, spec.width, spec.fill, spec.align ? spec.align : '>');
}

std::string format_value(const Value& v, std::string_view spec_text) {
  if (spec_text.empty()) return to_str(v);
  const Spec spec = parse_spec(spec_text);
  if (v.is_number() && spec.type != 's') return format_number(v, spec);
  if (!v.is_string() || (spec.type && spec.type != 's') || spec.align == '=')
    fail("unsupported format string passed to " + type_name(v) + ".__format__");
  std::string s = v.text;
  if (spec.precision >= 0) s = text::slice_code_points(s, 0, spec.precision);
  return text::pad(s, spec.width, spec.fill, spec.align ? spec.align : '<');
}

}  // namespace

std::string format_string(Renderer& renderer, std::string_view format, CallArgs& args) {
  std::string out;
  std::size_t next_auto = 0;
  bool manual = false, automatic = false;
  for (std::size_t i = 0; i < format.size(); ++i) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}')
        ++i;
      else
        fail("Single '}' encountered in format string");
      out.push_back('}');
      continue;
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    const std::size_t close = format.find('}', i);
    if (close == std::string_view::npos) fail("expected '}' before end of string");
    std::string_view field = format.substr(i + 1, close - i - 1);
    if (field.find('{') != std::string_view::npos) fail("nested replacement fields in format specs are not supported");
    i = close;
    std::string_view spec, conversion;
    if (const std::size_t colon = field.find(':'); colon != std::string_view::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    if (const std::size_t bang = field.find('!'); bang != std::string_view::npos) {
      conversion = field.substr(bang + 1);
      field = field.substr(0, bang);
    }
    const std::size_t name_end = std::min(field.find('.'), field.find('['));
    const std::string_view name = field.substr(0, name_end);
    Value value;
    if (name.empty() || name.find_first_not_of("0123456789") == std::string_view::npos) {
      if (name.empty() ? manual : automatic) fail("cannot switch between automatic and manual field numbering");
      (name.empty() ? automatic : manual) = true;
      const std::size_t index = name.empty() ? next_auto++ : std::stoul(std::string(name.substr(0, 9)));
      if (index >= args.positional.size()) fail("tuple index out of range");
      value = args.positional[index];
    } else {
      const auto found = std::find_if(args.keywords.begin(), args.keywords.end(),
                                      [&](const auto& keyword) { return keyword.first == name; });
      if (found == args.keywords.end()) fail(repr_string(std::string(name)));
      value = found->second;
    }
    for (std::size_t p = name_end; p < field.size();) {  // .attribute and [key] parts
      if (field[p] == '.') {
        const std::size_t end = std::min(field.find('.', p + 1), field.find('[', p + 1));
        value = renderer.getattr(value, field.substr(p + 1, end - p - 1));
        p = end;
      } else {
        const std::size_t end = field.find(']', p);
        if (end == std::string_view::npos) fail("Missing ']' in format string");
        const std::string key(field.substr(p + 1, end - p - 1));
        const bool numeric =
            !key.empty() && key.find_first_not_of("0123456789") == std::string::npos && key.size() < 18;
        value = renderer.getitem(value, numeric ? Value::of_int(std::stoll(key)) : Value::string(key));
        p = end + 1;
      }
    }
    if (conversion == "r" || conversion == "a")
      value = Value::string(repr(value));
    else if (conversion == "s")
      value = Value::string(to_str(value));
    else if (!conversion.empty())
      fail("Unknown conversion specifier " + std::string(conversion));
    out += format_value(value, spec);
  }
  renderer.charge_for_size(out.size());
  return out;
}

}  // namespace parley::jinja
