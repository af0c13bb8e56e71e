#include "model/jinja/utf8.hpp"

namespace parley::jinja::utf8 {

namespace {

constexpr char32_t kEscapedByteBase = 0xDC00;  // surrogateescape: byte b <-> U+DC00 + b (b >= 0x80)

// The length of the well-formed sequence starting at text[i], or 0 if it is not one.
std::size_t sequence_length(std::string_view text, std::size_t i, char32_t& code_point) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char lead = byte(0);
  std::size_t n = 0;
  char32_t c = 0;
  if (lead >= 0xC2 && lead <= 0xDF)
    n = 2, c = lead & 0x1F;
  else if (lead >= 0xE0 && lead <= 0xEF)
    n = 3, c = lead & 0x0F;
  else if (lead >= 0xF0 && lead <= 0xF4)
    n = 4, c = lead & 0x07;
  else
    return 0;
  if (i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
    c = (c << 6) | (byte(k) & 0x3F);
  }
  const bool overlong = (n == 3 && c < 0x800) || (n == 4 && c < 0x10000);
  if (overlong || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
  code_point = c;
  return n;
}

bool in_range(char32_t c, char32_t first, char32_t last) { return c >= first && c <= last; }

// Blocks laid out as (upper, lower) pairs from an even code point: Latin Extended-A, parts of Cyrillic.
bool in_even_pair_block(char32_t c) {
  return in_range(c, 0x100, 0x12F) || in_range(c, 0x132, 0x137) || in_range(c, 0x14A, 0x177) ||
         in_range(c, 0x460, 0x481) || in_range(c, 0x48A, 0x4BF);
}

}  // namespace

std::size_t decode_one(std::string_view text, std::size_t pos, char32_t& code_point) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) {
    code_point = lead;
    return 1;
  }
  const std::size_t n = sequence_length(text, pos, code_point);
  if (n == 0) code_point = kEscapedByteBase + lead;
  return n == 0 ? 1 : n;
}

std::u32string decode(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    char32_t c = 0;
    i += decode_one(text, i, c);
    out.push_back(c);
  }
  return out;
}

void append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c >= kEscapedByteBase + 0x80 && c <= kEscapedByteBase + 0xFF) {
    out.push_back(static_cast<char>(c - kEscapedByteBase));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string encode(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t c : code_points) append(out, c);
  return out;
}

bool is_ascii(std::string_view text) {
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

std::size_t length(std::string_view text) {
  if (is_ascii(text)) return text.size();
  return decode(text).size();
}

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         in_range(c, 0x2000, 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || in_range(c, 0x1C, 0x1E) || c == 0x85 || c == 0x2028 ||
         c == 0x2029;
}

bool is_digit(char32_t c) { return c >= '0' && c <= '9'; }

bool is_alpha(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (is_cased(c)) return true;
  // Outside the case tables: count CJK, kana, Hangul, Arabic, Hebrew, Devanagari and such as letters, not
  // punctuation, symbols, spaces or emoji.
  return !is_space(c) && !in_range(c, 0x80, 0xBF) && !in_range(c, 0x2000, 0x2BFF) && !in_range(c, 0x3000, 0x303F) &&
         !in_range(c, 0xFF00, 0xFF20) && !in_range(c, 0x1F000, 0x1FAFF) && !in_range(c, 0xDC80, 0xDCFF);
}

char32_t to_upper(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (c == 0xB5) return 0x39C;
  if (c == 0xFF) return 0x178;
  if (in_range(c, 0xE0, 0xFE) && c != 0xF7) return c - 32;
  if (c == 0x131) return 'I';
  if (c == 0x17F) return 'S';
  if (in_even_pair_block(c)) return (c % 2 == 1) ? c - 1 : c;
  if (in_range(c, 0x139, 0x148) || in_range(c, 0x179, 0x17E)) return (c % 2 == 0) ? c - 1 : c;
  if (c == 0x3C2) return 0x3A3;
  if (in_range(c, 0x3B1, 0x3C9)) return c - 32;
  if (c == 0x3AC) return 0x386;
  if (in_range(c, 0x3AD, 0x3AF)) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (in_range(c, 0x3CD, 0x3CE)) return c - 63;
  if (in_range(c, 0x430, 0x44F)) return c - 32;
  if (in_range(c, 0x450, 0x45F)) return c - 80;
  if (in_range(c, 0xFF41, 0xFF5A)) return c - 32;
  return c;
}

char32_t to_lower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (in_range(c, 0xC0, 0xDE) && c != 0xD7) return c + 32;
  if (c == 0x130) return 'i';
  if (c == 0x178) return 0xFF;
  if (in_even_pair_block(c)) return (c % 2 == 0) ? c + 1 : c;
  if (in_range(c, 0x139, 0x148) || in_range(c, 0x179, 0x17E)) return (c % 2 == 1) ? c + 1 : c;
  if (in_range(c, 0x391, 0x3A9) && c != 0x3A2) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (in_range(c, 0x388, 0x38A)) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (in_range(c, 0x38E, 0x38F)) return c + 63;
  if (in_range(c, 0x410, 0x42F)) return c + 32;
  if (in_range(c, 0x400, 0x40F)) return c + 80;
  if (in_range(c, 0xFF21, 0xFF3A)) return c + 32;
  return c;
}

std::string upper(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  if (is_ascii(text)) {
    for (char c : text) out.push_back(static_cast<char>(to_upper(static_cast<unsigned char>(c))));
    return out;
  }
  for (char32_t c : decode(text)) {
    if (c == 0xDF)
      out += "SS";  // Python's full mapping: 'ß'.upper() == 'SS'
    else
      append(out, to_upper(c));
  }
  return out;
}

std::string lower(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  if (is_ascii(text)) {
    for (char c : text) out.push_back(static_cast<char>(to_lower(static_cast<unsigned char>(c))));
    return out;
  }
  for (char32_t c : decode(text)) append(out, to_lower(c));
  return out;
}

}  // namespace parley::jinja::utf8
