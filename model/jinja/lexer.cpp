#include "model/jinja/lexer.hpp"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "model/jinja/jinja.hpp"
#include "model/jinja/utf8.hpp"

namespace parley::jinja {

namespace {

// Longest first, as Jinja2 sorts them: "**" before "*".
// clang-format off
constexpr std::string_view kOperators[] = {"**", "//", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
                                           "]",  "(",  ")",  "{",  "}",  ">",  "<", "=", ".", ":", "|", ",", ";"};
// clang-format on

bool is_name_start(unsigned char c) { return std::isalpha(c) || c == '_' || c >= 0x80; }
bool is_name_char(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

// \r\n and \r become \n; one trailing newline goes (keep_trailing_newline=False).
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// The offset where the whitespace (Python's \s) ending `text` begins.
std::size_t trailing_space_start(std::string_view text) {
  std::size_t end = text.size();
  while (end > 0) {
    std::size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80 && end - start < 4) --start;
    char32_t c = 0;
    if (utf8::decode_one(text, start, c) != end - start || !utf8::is_space(c)) break;
    end = start;
  }
  return end;
}

// The offset after the whitespace starting `text` at pos.
std::size_t skip_space(std::string_view text, std::size_t pos) {
  char32_t c = 0;
  while (pos < text.size()) {
    const std::size_t n = utf8::decode_one(text, pos, c);
    if (!utf8::is_space(c)) break;
    pos += n;
  }
  return pos;
}

class Lexer {
 public:
  Lexer(std::string source, const Options& options) : src_(std::move(source)), options_(options) {}

  std::vector<Token> run() {
    tokens_.reserve(src_.size() / 4 + 16);
    while (pos_ < src_.size()) lex_root();
    push(TokenType::Eof, "");
    return std::move(tokens_);
  }

 private:
  enum class Tag { Variable, Block, Comment };

  void push(TokenType type, std::string value) { tokens_.push_back(Token{type, std::move(value), line_}); }

  void advance_to(std::size_t end) {
    for (std::size_t i = pos_; i < end; ++i)
      if (src_[i] == '\n') ++line_;
    pos_ = end;
  }

  bool at(std::size_t pos, std::string_view s) const { return src_.compare(pos, s.size(), s) == 0; }

  // Jinja2's OptionalLStrip: text before a tag loses its trailing whitespace for `-`, or for lstrip_blocks
  // the spaces between the line start and a block or comment tag.
  void emit_text(std::size_t end, char sign, bool lstrip_allowed) {
    std::string_view text(src_.data() + pos_, end - pos_);
    std::size_t keep = text.size();
    if (sign == '-') {
      keep = trailing_space_start(text);
    } else if (sign != '+' && options_.lstrip_blocks && lstrip_allowed) {
      const std::size_t newline = text.rfind('\n');
      const std::size_t line_start = newline == std::string_view::npos ? 0 : newline + 1;
      if ((line_start > 0 || line_starting_) && line_start < text.size() && skip_space(text, line_start) == text.size())
        keep = line_start;
    }
    if (keep > 0) push(TokenType::Data, std::string(text.substr(0, keep)));
    advance_to(end);
  }

  // After a closing tag: `-` eats all whitespace, trim_blocks one newline (block and comment tags only).
  void consume_tag_end(std::size_t end, char sign, bool trims) {
    advance_to(end);
    if (sign == '-')
      advance_to(skip_space(src_, pos_));
    else if (sign != '+' && trims && options_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n')
      advance_to(pos_ + 1);
    line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
  }

  char sign_at(std::size_t pos) const {
    return pos < src_.size() && (src_[pos] == '-' || src_[pos] == '+') ? src_[pos] : '\0';
  }

  // `{% raw %}`, `{%- raw -%}`: the offset after it and the sign before its end, or npos.
  std::size_t raw_begin_end(std::size_t tag) const {
    std::size_t p = tag + 2;
    if (sign_at(p)) ++p;
    p = skip_space(src_, p);
    if (!at(p, "raw")) return std::string::npos;
    p = skip_space(src_, p + 3);
    if (at(p, "-%}")) return skip_space(src_, p + 3);
    if (at(p, "%}")) return p + 2;
    return std::string::npos;
  }

  void lex_root() {
    std::size_t tag = pos_;
    while ((tag = src_.find('{', tag)) != std::string::npos) {
      if (tag + 1 < src_.size() && (src_[tag + 1] == '{' || src_[tag + 1] == '%' || src_[tag + 1] == '#')) break;
      ++tag;
    }
    if (tag == std::string::npos) {
      push(TokenType::Data, src_.substr(pos_));
      advance_to(src_.size());
      return;
    }
    const char sign = sign_at(tag + 2);
    const std::size_t after = tag + 2 + (sign ? 1 : 0);
    const char kind = src_[tag + 1];
    if (kind == '%') {
      const std::size_t raw_end = raw_begin_end(tag);
      if (raw_end != std::string::npos) {
        emit_text(tag, sign, true);
        advance_to(raw_end);
        line_starting_ = src_[pos_ - 1] == '\n';
        lex_raw_body();
        return;
      }
    }
    emit_text(tag, sign, kind != '{');
    advance_to(after);
    line_starting_ = false;
    if (kind == '#')
      lex_comment();
    else
      lex_tag(kind == '{' ? Tag::Variable : Tag::Block);
  }

  void lex_comment() {
    const std::size_t close = src_.find("#}", pos_);
    if (close == std::string::npos) throw ParseError(line_, "missing end of comment tag");
    const char sign = close > pos_ ? sign_at(close - 1) : '\0';
    consume_tag_end(close + 2, sign, true);
  }

  void lex_raw_body() {
    for (std::size_t tag = src_.find("{%", pos_); tag != std::string::npos; tag = src_.find("{%", tag + 1)) {
      const char sign = sign_at(tag + 2);
      std::size_t p = skip_space(src_, tag + 2 + (sign ? 1 : 0));
      if (!at(p, "endraw")) continue;
      p = skip_space(src_, p + 6);
      const char end_sign = sign_at(p);
      if (!at(p + (end_sign ? 1 : 0), "%}")) continue;
      emit_text(tag, sign, true);
      consume_tag_end(p + (end_sign ? 3 : 2), end_sign, true);
      return;
    }
    throw ParseError(line_, "missing end of raw directive");
  }

  bool lex_tag_end(Tag tag) {
    if (tag == Tag::Variable) {
      const char sign = src_[pos_] == '-' ? '-' : '\0';
      if (!at(pos_ + (sign ? 1 : 0), "}}")) return false;
      push(TokenType::VariableEnd, "");
      consume_tag_end(pos_ + (sign ? 3 : 2), sign, false);
      return true;
    }
    const char sign = sign_at(pos_);
    if (!at(pos_ + (sign ? 1 : 0), "%}")) return false;
    push(TokenType::BlockEnd, "");
    consume_tag_end(pos_ + (sign ? 3 : 2), sign, true);
    return true;
  }

  void lex_tag(Tag tag) {
    push(tag == Tag::Variable ? TokenType::VariableBegin : TokenType::BlockBegin, "");
    std::vector<char> brackets;  // the closers expected, innermost last
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      const bool may_end = c == '-' || c == '+' || c == '%' || c == '}';
      if (brackets.empty() && may_end && lex_tag_end(tag)) return;
      const bool may_be_space = static_cast<unsigned char>(c) >= 0x80 || utf8::is_space(static_cast<unsigned char>(c));
      if (const std::size_t space_end = may_be_space ? skip_space(src_, pos_) : pos_; space_end > pos_) {
        advance_to(space_end);
        continue;
      }
      if (lex_number() || lex_name() || lex_string()) continue;
      lex_operator(brackets);
    }
  }

  static std::size_t digits_end(std::string_view s, std::size_t p, bool (*is_digit)(char)) {
    if (p >= s.size() || !is_digit(s[p])) return std::string::npos;
    ++p;
    while (p < s.size()) {
      if (is_digit(s[p]))
        ++p;
      else if (s[p] == '_' && p + 1 < s.size() && is_digit(s[p + 1]))
        p += 2;
      else
        break;
    }
    return p;
  }

  static bool decimal(char c) { return c >= '0' && c <= '9'; }

  // Jinja2's float_re, then integer_re (0b/0o/0x, a decimal without leading zeros, or zeros).
  bool lex_number() {
    const std::string_view s = src_;
    if (!decimal(s[pos_])) return false;
    const std::size_t int_end = digits_end(s, pos_, decimal);
    std::size_t float_end = std::string::npos;
    if (pos_ == 0 || s[pos_ - 1] != '.') {
      std::size_t p = int_end;
      const bool fraction = p < s.size() && s[p] == '.' && digits_end(s, p + 1, decimal) != std::string::npos;
      if (fraction) p = digits_end(s, p + 1, decimal);
      if (p < s.size() && (s[p] == 'e' || s[p] == 'E')) {
        std::size_t q = p + 1;
        if (q < s.size() && (s[q] == '+' || s[q] == '-')) ++q;
        const std::size_t exponent_end = digits_end(s, q, decimal);
        if (exponent_end != std::string::npos)
          float_end = exponent_end;
        else if (fraction)
          float_end = p;
      } else if (fraction) {
        float_end = p;
      }
    }
    if (float_end != std::string::npos) {
      std::string digits;
      for (char c : s.substr(pos_, float_end - pos_))
        if (c != '_') digits.push_back(c);
      push(TokenType::Float, digits);
      tokens_.back().real = std::strtod(digits.c_str(), nullptr);
      advance_to(float_end);
      return true;
    }
    std::size_t end = pos_ + 1;
    int base = 10;
    const char prefix = pos_ + 1 < s.size() ? static_cast<char>(std::tolower(s[pos_ + 1])) : '\0';
    if (s[pos_] == '0' && (prefix == 'b' || prefix == 'o' || prefix == 'x')) {
      base = prefix == 'b' ? 2 : prefix == 'o' ? 8 : 16;
      std::size_t p = pos_ + 2;
      const auto digit_ok = [&](char c) { return hex_digit_value(c) >= 0 && hex_digit_value(c) < base; };
      while (p < s.size() && (digit_ok(s[p]) || (s[p] == '_' && p + 1 < s.size() && digit_ok(s[p + 1])))) ++p;
      if (p == pos_ + 2)
        base = 10;  // "0x" alone: the integer 0, then a name
      else
        end = p;
    } else if (s[pos_] != '0') {
      end = int_end;
    } else {
      while (end < s.size() && (s[end] == '0' || (s[end] == '_' && end + 1 < s.size() && s[end + 1] == '0'))) ++end;
    }
    std::string digits;
    for (char c : s.substr(pos_ + (base == 10 ? 0 : 2), end - pos_ - (base == 10 ? 0 : 2)))
      if (c != '_') digits.push_back(c);
    errno = 0;
    const long long value = std::strtoll(digits.c_str(), nullptr, base);
    if (errno == ERANGE)
      throw ParseError(line_, "integer literal too large: " + std::string(s.substr(pos_, end - pos_)));
    push(TokenType::Integer, std::string(s.substr(pos_, end - pos_)));
    tokens_.back().integer = value;
    advance_to(end);
    return true;
  }

  bool lex_name() {
    if (!is_name_start(src_[pos_])) return false;
    std::size_t end = pos_ + 1;
    while (end < src_.size() && is_name_char(src_[end])) ++end;
    push(TokenType::Name, src_.substr(pos_, end - pos_));
    advance_to(end);
    return true;
  }

  bool lex_string() {
    const char quote = src_[pos_];
    if (quote != '\'' && quote != '"') return false;
    std::size_t p = pos_ + 1;
    while (p < src_.size() && src_[p] != quote) p += src_[p] == '\\' ? 2 : 1;
    if (p >= src_.size()) return false;  // unterminated: reported as an unexpected character
    push(TokenType::String, decode_string_literal(std::string_view(src_).substr(pos_ + 1, p - pos_ - 1), line_));
    advance_to(p + 1);
    return true;
  }

  void lex_operator(std::vector<char>& brackets) {
    for (std::string_view op : kOperators) {
      if (op[0] != src_[pos_] || !at(pos_, op)) continue;
      const char c = op[0];
      if (op.size() == 1 && (c == '(' || c == '[' || c == '{'))
        brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      if (op.size() == 1 && (c == ')' || c == ']' || c == '}')) {
        if (brackets.empty()) throw ParseError(line_, "unexpected '" + std::string(op) + "'");
        if (brackets.back() != c)
          throw ParseError(line_, "unexpected '" + std::string(op) + "', expected '" + brackets.back() + "'");
        brackets.pop_back();
      }
      push(TokenType::Operator, std::string(op));
      advance_to(pos_ + op.size());
      return;
    }
    throw ParseError(line_, "unexpected character " + repr_char(pos_));
  }

  std::string repr_char(std::size_t pos) const {
    const unsigned char c = src_[pos];
    if (c >= 0x20 && c < 0x7F) return c == '\'' ? "\"'\"" : "'" + std::string(1, static_cast<char>(c)) + "'";
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", c);
    return hex;
  }

  std::string src_;
  const Options& options_;
  std::size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;  // the last match ended a line: lstrip_blocks applies to text without a newline
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const Options& options) {
  return Lexer(normalize_newlines(source), options).run();
}

std::string describe(const Token& token) {
  switch (token.type) {
    case TokenType::Data:
      return "template data";
    case TokenType::VariableBegin:
      return "'{{'";
    case TokenType::VariableEnd:
      return "end of print statement";
    case TokenType::BlockBegin:
      return "'{%'";
    case TokenType::BlockEnd:
      return "end of statement block";
    case TokenType::Eof:
      return "end of template";
    case TokenType::String:
      return "string";
    case TokenType::Integer:
    case TokenType::Float:
      return "number " + token.value;
    default:
      return "'" + token.value + "'";
  }
}

}  // namespace parley::jinja
