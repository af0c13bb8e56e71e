// Template source to tokens, with Jinja2's lexer rules: whitespace control (`{%-`, `-%}`, `+%}`), trim_blocks,
// lstrip_blocks, raw blocks, comments, and end tags recognised only where brackets balance.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace parley::jinja {

struct Options;

enum class TokenType {
  Data,
  VariableBegin,
  VariableEnd,
  BlockBegin,
  BlockEnd,
  Name,
  String,
  Integer,
  Float,
  Operator,
  Eof
};

struct Token {
  TokenType type;
  std::string value;  // Data and String: the text; Name: the identifier; Operator: its spelling
  int line = 1;
  std::int64_t integer = 0;
  double real = 0;
};

// Throws ParseError for an unterminated comment or raw block, an unexpected character or an unbalanced bracket.
std::vector<Token> tokenize(std::string_view source, const Options& options);

std::string describe(const Token& token);  // for messages: "end of print statement", "'foo'"

// A string literal's body with its escapes decoded (\n, \x41, \u00e9, octal...); throws ParseError
// (string_literal.cpp).
std::string decode_string_literal(std::string_view body, int line);
int hex_digit_value(char c);  // -1 for a non-hex character

}  // namespace parley::jinja
