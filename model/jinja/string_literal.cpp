// String literals' escapes, decoded as Jinja2 decodes them (Python's unicode-escape codec).
#include "model/jinja/jinja.hpp"
#include "model/jinja/lexer.hpp"
#include "model/jinja/utf8.hpp"

namespace parley::jinja {

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string decode_string_literal(std::string_view body, int line) {
  std::string out;
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out.push_back(body[i]);
      continue;
    }
    const char c = body[++i];
    switch (c) {
      case '\n':
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '\'':
        out.push_back('\'');
        break;
      case '"':
        out.push_back('"');
        break;
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'v':
        out.push_back('\v');
        break;
      case 'x':
      case 'u':
      case 'U': {
        const std::size_t digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        char32_t code_point = 0;
        for (std::size_t k = 1; k <= digits; ++k) {
          const int h = i + k < body.size() ? hex_digit_value(body[i + k]) : -1;
          if (h < 0) throw ParseError(line, std::string("truncated \\") + c + " escape in a string");
          code_point = code_point * 16 + h;
        }
        if (code_point > 0x10FFFF) throw ParseError(line, "illegal Unicode character in a string");
        utf8::append(out, code_point);
        i += digits;
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          char32_t code_point = c - '0';
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7'; ++k)
            code_point = code_point * 8 + (body[++i] - '0');
          utf8::append(out, code_point);
        } else if (c == 'N') {
          throw ParseError(line, "\\N{...} escapes are not supported");
        } else {
          out.push_back('\\');
          out.push_back(c);
        }
    }
  }
  return out;
}

}  // namespace parley::jinja
