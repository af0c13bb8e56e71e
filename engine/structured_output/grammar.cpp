// The GBNF reader: recursive descent over the text, building byte-level rules as it goes (groups and
// repetitions become anonymous rules), then the checks that make matching terminate.
#include "engine/structured_output/grammar.hpp"

#include <functional>
#include <unordered_map>

#include "engine/structured_output/grammar_builder.hpp"
#include "engine/structured_output/utf8_ranges.hpp"

namespace parley::structured {
namespace {

constexpr int kMaxRepetition = 10000;  // {m,n} bounds above this would build rules by the thousand

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  Grammar parse() {
    skip_space(true);
    while (pos_ < text_.size()) {
      const size_t name_at = pos_;
      const std::string name = parse_name();
      skip_space(false);
      if (text_.substr(pos_, 3) != "::=") fail("expected '::=' after rule name '" + name + "'");
      pos_ += 3;
      skip_space(true);
      const int rule = builder_.rule_id(name);
      if (builder_.is_defined(rule)) fail_at(name_at, "rule '" + name + "' is defined twice");
      builder_.define(rule, parse_alternatives(name, false));
      skip_space(true);
    }
    return builder_.finish("root");
  }

 private:
  using Alternatives = GrammarBuilder::Alternatives;
  using Sequence = GrammarBuilder::Sequence;

  [[noreturn]] void fail_at(size_t at, const std::string& what) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) text_[i] == '\n' ? (++line, column = 1) : ++column;
    throw GrammarError("grammar: " + what + " at line " + std::to_string(line) + ", column " + std::to_string(column));
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  // Spaces, tabs and comments; newlines too where a rule cannot end (inside groups, after '|' or '::=').
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n'))
        ++pos_;
      else if (c == '#')
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      else
        break;
    }
  }
  // A rule goes on past a line break when the next line starts with '|'.
  bool continues_on_next_line() {
    size_t p = pos_;
    while (p < text_.size() &&
           (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\r' || text_[p] == '\n' || text_[p] == '#')) {
      if (text_[p] == '#')
        while (p < text_.size() && text_[p] != '\n') ++p;
      else
        ++p;
    }
    if (p < text_.size() && text_[p] == '|') return pos_ = p, true;
    return false;
  }

  static bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }
  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && name_char(text_[pos_])) ++pos_;
    if (pos_ == start) fail(at_end() ? "expected a rule name" : std::string("unexpected '") + peek() + "'");
    return std::string(text_.substr(start, pos_ - start));
  }

  Alternatives parse_alternatives(const std::string& rule_name, bool nested) {
    Alternatives alts;
    alts.push_back(parse_sequence(rule_name, nested));
    while (peek() == '|' || (!nested && continues_on_next_line())) {
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(rule_name, nested));
    }
    return alts;
  }

  Sequence parse_sequence(const std::string& rule_name, bool nested) {
    Sequence seq;
    size_t last_item = 0;  // where the item a postfix operator applies to starts in seq
    while (!at_end()) {
      const char c = peek();
      const size_t item_start = seq.size();
      if (c == '"') {
        parse_literal(seq);
      } else if (c == '[') {
        builder_.append_class(seq, parse_class(), rule_name);
      } else if (c == '.') {
        ++pos_;
        builder_.append_class(seq, CodepointSet::all(), rule_name);
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        Alternatives inner = parse_alternatives(rule_name, true);
        if (peek() != ')') fail("expected ')'");
        ++pos_;
        builder_.append_group(seq, std::move(inner), rule_name);
      } else if (name_char(c)) {
        const size_t at = pos_;
        const std::string name = parse_name();
        skip_space(nested);
        if (text_.substr(pos_, 3) == "::=") {  // the next rule starts: this one ended at the line break
          pos_ = at;
          break;
        }
        seq.push_back({GrammarElement::Kind::Rule, builder_.rule_id(name)});
        last_item = item_start;
        continue;
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (seq.empty() || last_item >= seq.size()) fail(std::string("'") + c + "' follows nothing to repeat");
        const auto [min, max] = parse_repetition();
        builder_.repeat(seq, last_item, min, max, rule_name);
        skip_space(nested);
        continue;
      } else {
        break;
      }
      last_item = item_start;
      skip_space(nested);
    }
    return seq;
  }

  std::pair<int, int> parse_repetition() {  // max -1: unbounded
    const char c = text_[pos_++];
    if (c == '*') return {0, -1};
    if (c == '+') return {1, -1};
    if (c == '?') return {0, 1};
    skip_space(true);
    const int min = parse_int();
    int max = min;
    skip_space(true);
    if (peek() == ',') {
      ++pos_;
      skip_space(true);
      max = std::isdigit(static_cast<unsigned char>(peek())) ? parse_int() : -1;
      skip_space(true);
    }
    if (peek() != '}') fail("expected '}' to close a repetition");
    ++pos_;
    if (max != -1 && max < min)
      fail("repetition {" + std::to_string(min) + "," + std::to_string(max) + "} has max < min");
    return {min, max};
  }
  int parse_int() {
    const size_t start = pos_;
    long value = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      value = value * 10 + (text_[pos_++] - '0');
      if (value > kMaxRepetition) fail_at(start, "repetition count above " + std::to_string(kMaxRepetition));
    }
    if (pos_ == start) fail("expected a number in a repetition");
    return int(value);
  }

  // One character of a literal or class: an escape or a whole UTF-8 sequence.
  uint32_t parse_char() {
    if (at_end()) fail("unexpected end of grammar");
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c == '\\') {
      ++pos_;
      if (at_end()) fail("unfinished escape");
      const char e = text_[pos_++];
      switch (e) {
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case 't':
          return '\t';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
          return uint32_t(e);
        case 'x':
          return parse_hex(2);
        case 'u':
          return parse_hex(4);
        case 'U':
          return parse_hex(8);
        default:
          fail_at(pos_ - 2, std::string("unknown escape '\\") + e + "'");
      }
    }
    const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || pos_ + len > text_.size()) fail("invalid UTF-8 in the grammar");
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (int i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<unsigned char>(text_[pos_ + i]) & 0x3F);
    pos_ += len;
    return cp;
  }
  uint32_t parse_hex(int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const char h = peek();
      const int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (d < 0) fail("expected " + std::to_string(digits) + " hex digits");
      value = value * 16 + uint32_t(d);
      ++pos_;
    }
    if (value > 0x10FFFF) fail("code point above U+10FFFF");
    return value;
  }

  void parse_literal(Sequence& seq) {
    ++pos_;  // the opening quote
    while (peek() != '"') {
      if (at_end() || peek() == '\n') fail("unterminated string literal");
      builder_.append_code_point(seq, parse_char());
    }
    ++pos_;
  }

  CodepointSet parse_class() {
    const size_t start = pos_++;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CodepointSet set;
    while (peek() != ']') {
      if (at_end()) fail_at(start, "unterminated character class");
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        hi = parse_char();
        if (hi < lo) fail("character range is out of order");
      }
      set.add(lo, hi);
    }
    ++pos_;
    return negated ? set.complement() : set;
  }

  std::string_view text_;
  size_t pos_ = 0;
  GrammarBuilder builder_;
};

}  // namespace

Grammar Grammar::parse(std::string_view gbnf) { return GbnfParser(gbnf).parse(); }

}  // namespace parley::structured
