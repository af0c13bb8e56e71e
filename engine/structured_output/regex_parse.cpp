// A recursive-descent parser for the regex subset of regex_grammar.hpp. Where ECMAScript and Python
// disagree on a construct ([] and [^], {,n}) it is refused rather than guessed; \d \w \s and `.` follow
// ECMAScript.
#include <string>

#include "engine/structured_output/grammar.hpp"
#include "engine/structured_output/regex_ast.hpp"

namespace parley::structured {

RegexNode RegexNode::of_chars(CodepointSet set) {
  RegexNode n;
  n.kind = Kind::Chars;
  n.chars = std::move(set);
  return n;
}

RegexNode RegexNode::seq(std::vector<RegexNode> items) {
  if (items.size() == 1) return std::move(items[0]);
  RegexNode n;
  n.kind = items.empty() ? Kind::Empty : Kind::Seq;
  n.children = std::move(items);
  return n;
}

RegexNode RegexNode::alt(std::vector<RegexNode> branches) {
  if (branches.size() == 1) return std::move(branches[0]);
  RegexNode n;
  n.kind = Kind::Alt;
  n.children = std::move(branches);
  return n;
}

RegexNode RegexNode::repeat(RegexNode item, int min, int max) {
  RegexNode n;
  n.kind = Kind::Repeat;
  n.children.push_back(std::move(item));
  n.min = min;
  n.max = max;
  return n;
}

bool matches_empty(const RegexNode& node) {
  switch (node.kind) {
    case RegexNode::Kind::Empty:
      return true;
    case RegexNode::Kind::Chars:
      return false;
    case RegexNode::Kind::Seq:
      for (const auto& c : node.children)
        if (!matches_empty(c)) return false;
      return true;
    case RegexNode::Kind::Alt:
      for (const auto& c : node.children)
        if (matches_empty(c)) return true;
      return false;
    case RegexNode::Kind::Repeat:
      return node.min == 0 || matches_empty(node.children[0]);
  }
  return false;
}

namespace {

CodepointSet digits() { return CodepointSet::range('0', '9'); }

CodepointSet word_chars() {
  CodepointSet s = CodepointSet::range('a', 'z');
  s.add('A', 'Z');
  s.add('0', '9');
  s.add('_', '_');
  return s;
}

CodepointSet space_chars() {  // ECMAScript's WhiteSpace and LineTerminator
  CodepointSet s = CodepointSet::range('\t', '\r');
  for (char32_t c : {0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) s.add(c, c);
  s.add(0x2000, 0x200A);
  return s;
}

CodepointSet any_but_line_terminators() {
  CodepointSet s;
  for (char32_t c : {0x0Au, 0x0Du, 0x2028u, 0x2029u}) s.add(c, c);
  return s.complement();
}

int hex_value(char32_t c) {
  if (c >= '0' && c <= '9') return int(c - '0');
  if (c >= 'a' && c <= 'f') return int(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return int(c - 'A' + 10);
  return -1;
}

bool is_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool is_letter(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

class RegexParser {
 public:
  explicit RegexParser(std::string_view pattern) : pattern_(pattern), chars_(decode_utf8(pattern, "regex")) {}

  RegexNode parse() {
    if (at('^'))
      ++pos_;
    else if (at('\\') && at('A', 1))
      pos_ += 2;
    RegexNode node = parse_alternation();
    if (pos_ < chars_.size()) fail("unbalanced ')'");  // the only thing that stops a top-level alternation
    return node;
  }

 private:
  [[noreturn]] void fail(const std::string& what, size_t index) const {
    const size_t offset = index < chars_.size() ? chars_[index].offset : pattern_.size();
    throw GrammarError("regex: " + what + " at offset " + std::to_string(offset) + " of /" + std::string(pattern_) +
                       "/");
  }
  [[noreturn]] void fail(const std::string& what) const { fail(what, pos_); }

  bool at(char32_t c, size_t ahead = 0) const {
    return pos_ + ahead < chars_.size() && chars_[pos_ + ahead].codepoint == c;
  }
  char32_t peek(size_t ahead = 0) const { return pos_ + ahead < chars_.size() ? chars_[pos_ + ahead].codepoint : 0; }
  bool at_end() const { return pos_ >= chars_.size(); }

  RegexNode parse_alternation() {
    std::vector<RegexNode> branches{parse_sequence()};
    while (at('|')) {
      ++pos_;
      branches.push_back(parse_sequence());
    }
    return RegexNode::alt(std::move(branches));
  }

  RegexNode parse_sequence() {
    std::vector<RegexNode> items;
    while (!at_end() && !at('|') && !at(')')) {
      if (at_end_anchor()) continue;
      items.push_back(parse_quantified());
    }
    return RegexNode::seq(std::move(items));
  }

  // `$`, `\Z` or `\z` are accepted only as the pattern's last characters.
  bool at_end_anchor() {
    const size_t length = at('$') ? 1 : (at('\\') && (at('Z', 1) || at('z', 1))) ? 2 : 0;
    if (length == 0) return false;
    if (pos_ + length != chars_.size()) fail("an anchor in the middle of the pattern is not supported");
    pos_ += length;
    return true;
  }

  // Reads {m}, {m,} or {m,n} at pos_ without consuming it; false when the brace is a literal.
  bool read_braces(int& min, int& max, size_t& length) const {
    size_t i = 1;
    auto number = [&](int& value) {
      const size_t start = i;
      value = 0;
      while (is_digit(peek(i))) {
        value = value * 10 + int(peek(i) - '0');
        if (value > 10000) fail("a repetition count above 10000 is not supported");
        ++i;
      }
      return i > start;
    };
    if (!at('{')) return false;
    if (peek(1) == ',' && is_digit(peek(2)))
      fail("'{,n}' (read differently by ECMAScript and Python) is not supported");
    if (!number(min)) return false;
    max = min;
    if (peek(i) == ',') {
      ++i;
      if (!number(max)) max = RegexNode::kUnbounded;
    }
    if (peek(i) != '}') return false;
    length = i + 1;
    return true;
  }

  RegexNode parse_quantified() {
    RegexNode atom = parse_atom();
    bool quantified = false;
    for (;;) {
      int min = 0, max = RegexNode::kUnbounded;
      size_t length = 1;
      if (at('*'))
        min = 0;
      else if (at('+'))
        min = 1;
      else if (at('?'))
        max = 1;
      else if (!read_braces(min, max, length))
        break;
      if (quantified) fail("a quantifier on a quantifier is not supported");
      if (max != RegexNode::kUnbounded && min > max)
        fail("a bad repetition range {" + std::to_string(min) + "," + std::to_string(max) + "}");
      pos_ += length;
      if (at('+')) fail("a possessive quantifier is not supported");
      if (at('?')) ++pos_;  // lazy: a grammar has no match preference
      atom = RegexNode::repeat(std::move(atom), min, max);
      quantified = true;
    }
    return atom;
  }

  RegexNode parse_atom() {
    const char32_t c = peek();
    int unused_min, unused_max;
    size_t unused_length;
    if (c == '*' || c == '+' || c == '?' || read_braces(unused_min, unused_max, unused_length)) {
      fail("nothing to repeat before a quantifier");
    }
    if (c == '^') fail("an anchor in the middle of the pattern is not supported");
    if (c == '(') return parse_group();
    if (c == '[') return RegexNode::of_chars(parse_class());
    ++pos_;
    if (c == '.') return RegexNode::of_chars(any_but_line_terminators());
    if (c == '\\') return RegexNode::of_chars(parse_escape(false));
    return RegexNode::of_chars(CodepointSet::single(c));
  }

  RegexNode parse_group() {
    const size_t open = pos_++;
    if (at('?')) {
      if (at(':', 1)) {
        pos_ += 2;
      } else if (at('=', 1) || at('!', 1) || (at('<', 1) && (at('=', 2) || at('!', 2)))) {
        fail("lookahead and lookbehind are not supported");
      } else if (at('P', 1) && at('=', 2)) {
        fail("a backreference is not supported");
      } else if (at('<', 1) || (at('P', 1) && at('<', 2))) {
        pos_ += at('<', 1) ? 2 : 3;
        while (!at_end() && !at('>')) ++pos_;
        if (at_end()) fail("an unterminated group name", open);
        ++pos_;
      } else {
        fail("inline flags and other '(?' groups are not supported");
      }
    }
    RegexNode inner = parse_alternation();
    if (!at(')')) fail("unbalanced '('", open);
    ++pos_;
    return inner;
  }

  CodepointSet parse_class() {
    const size_t open = pos_++;
    const bool negated = at('^');
    if (negated) ++pos_;
    if (at(']')) fail("an empty class ('[]' or '[^]', read differently by ECMAScript and Python) is not supported");
    CodepointSet set;
    while (!at(']')) {
      if (at_end()) fail("an unterminated character class", open);
      const size_t item_start = pos_;
      const CodepointSet first = parse_class_atom();
      if (at('-') && !at(']', 1) && pos_ + 1 < chars_.size()) {
        ++pos_;
        const CodepointSet last = parse_class_atom();
        if (!first.is_single() || !last.is_single()) fail("a bad range in a character class", item_start);
        const char32_t lo = first.ranges()[0].first, hi = last.ranges()[0].first;
        if (lo > hi) fail("a bad range in a character class (its start is above its end)", item_start);
        set.add(lo, hi);
      } else {
        set.add(first);
      }
    }
    ++pos_;
    return negated ? set.complement() : set;
  }

  CodepointSet parse_class_atom() {
    const char32_t c = peek();
    ++pos_;
    if (c != '\\') return CodepointSet::single(c);
    return parse_escape(true);
  }

  // After the backslash. In a class \b is a backspace; elsewhere it is a word boundary.
  CodepointSet parse_escape(bool in_class) {
    const size_t start = pos_ - 1;
    if (at_end()) fail("a trailing backslash", start);
    const char32_t c = peek();
    ++pos_;
    switch (c) {
      case 'd':
        return digits();
      case 'D':
        return digits().complement();
      case 'w':
        return word_chars();
      case 'W':
        return word_chars().complement();
      case 's':
        return space_chars();
      case 'S':
        return space_chars().complement();
      case 'n':
        return CodepointSet::single('\n');
      case 'r':
        return CodepointSet::single('\r');
      case 't':
        return CodepointSet::single('\t');
      case 'f':
        return CodepointSet::single('\f');
      case 'v':
        return CodepointSet::single('\v');
      case 'x':
        return CodepointSet::single(read_hex(2, start));
      case 'u':
        return CodepointSet::single(read_hex(4, start));
      case '0':
        if (is_digit(peek())) fail("an octal escape is not supported", start);
        return CodepointSet::single(0);
      case 'b':
        if (in_class) return CodepointSet::single('\b');
        fail("a word boundary (\\b) is not supported", start);
      case 'B':
        fail("a word boundary (\\B) is not supported", start);
      case 'k':
        fail("a backreference is not supported", start);
      case 'A':
      case 'Z':
      case 'z':
        fail("an anchor in the middle of the pattern is not supported", start);
      case 'p':
      case 'P':
        fail("a Unicode property escape is not supported", start);
      default:
        break;
    }
    if (is_digit(c)) fail("a backreference is not supported", start);
    if (is_letter(c)) fail(std::string("an unknown escape '\\") + char(c) + "'", start);
    return CodepointSet::single(c);  // escaped punctuation stands for itself
  }

  char32_t read_hex(int count, size_t start) {
    char32_t value = 0;
    for (int i = 0; i < count; ++i) {
      const int digit = hex_value(peek());
      if (digit < 0) fail("a bad hexadecimal escape", start);
      value = value * 16 + char32_t(digit);
      ++pos_;
    }
    if (value >= 0xD800 && value <= 0xDFFF) fail("a surrogate escape is not supported", start);
    return value;
  }

  std::string_view pattern_;
  std::vector<DecodedChar> chars_;
  size_t pos_ = 0;
};

}  // namespace

RegexNode parse_regex(std::string_view pattern) { return RegexParser(pattern).parse(); }

}  // namespace parley::structured
