// Writes a parsed regex (regex_ast.hpp) as one GBNF expression.
#include "engine/structured_output/regex_grammar.hpp"

#include <cstdio>
#include <optional>

#include "engine/structured_output/regex_ast.hpp"

namespace parley::structured {
namespace {

// How tightly an emitted expression binds: an Atom can take a postfix; a Seq (a postfixed atom too) can
// sit in a sequence; an Alt needs parentheses anywhere but at the top.
enum class Binding { Atom, Seq, Alt };

struct Expr {
  std::string text;
  Binding binding;
};

std::string parenthesized_unless(const Expr& e, Binding at_most) {
  return int(e.binding) <= int(at_most) ? e.text : "(" + e.text + ")";
}

void append_json_escaped(std::string& out, char32_t c) {
  switch (c) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\f':
      out += "\\f";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\r':
      out += "\\r";
      return;
    case '\t':
      out += "\\t";
      return;
    default:
      break;
  }
  if (c < 0x20) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
    out += buf;
    return;
  }
  append_utf8(out, c);
}

class Emitter {
 public:
  explicit Emitter(RegexText text) : text_(text) {}

  Expr emit(const RegexNode& node) const {
    switch (node.kind) {
      case RegexNode::Kind::Empty:
        return {"\"\"", Binding::Atom};
      case RegexNode::Kind::Chars:
        return emit_chars(node.chars);
      case RegexNode::Kind::Seq:
        return emit_seq(node.children);
      case RegexNode::Kind::Alt:
        return emit_alt(node.children);
      case RegexNode::Kind::Repeat:
        return emit_repeat(node);
    }
    return {"\"\"", Binding::Atom};
  }

 private:
  std::string literal(const std::vector<char32_t>& chars) const {
    std::string bytes;
    for (char32_t c : chars) {
      if (text_ == RegexText::JsonString)
        append_json_escaped(bytes, c);
      else
        append_utf8(bytes, c);
    }
    return gbnf_literal(bytes);
  }

  // For characters that are written as themselves in both kinds of text.
  std::string class_or_literal(const CodepointSet& set) const {
    return set.is_single() ? literal({set.ranges()[0].first}) : gbnf_class(set);
  }

  Expr emit_chars(const CodepointSet& set) const {
    if (set.is_single() || text_ == RegexText::Raw) return {class_or_literal(set), Binding::Atom};
    // Inside a JSON string a quote, a backslash and control characters exist only as escapes.
    CodepointSet plain = set.intersect(CodepointSet::range(0x20, kMaxCodepoint));
    plain = plain.minus(CodepointSet::single('"')).minus(CodepointSet::single('\\'));
    std::vector<Expr> options;
    if (!plain.empty()) options.push_back({class_or_literal(plain), Binding::Atom});
    for (char32_t c : {U'"', U'\\', U'\b', U'\f', U'\n', U'\r', U'\t'}) {
      if (set.contains(c)) options.push_back({literal({c}), Binding::Atom});
    }
    for (char32_t high : {0u, 1u}) {  // the other control characters as \u00XY, one class per X
      CodepointSet low_digits;
      for (char32_t low = 0; low < 16; ++low) {
        const char32_t c = high * 16 + low;
        if (!set.contains(c) || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t') continue;
        const char32_t digit = low < 10 ? U'0' + low : U'a' + low - 10;
        low_digits.add(digit, digit);
      }
      if (low_digits.empty()) continue;
      const std::string prefix = gbnf_literal(high == 0 ? "\\u000" : "\\u001");
      options.push_back({prefix + " " + class_or_literal(low_digits), Binding::Seq});
    }
    if (options.size() == 1) return options[0];
    std::string joined;
    for (const auto& o : options) joined += (joined.empty() ? "" : " | ") + o.text;
    return {joined, Binding::Alt};
  }

  Expr emit_seq(const std::vector<RegexNode>& items) const {
    std::vector<Expr> parts;
    std::vector<char32_t> run;  // consecutive single characters become one literal
    auto flush = [&] {
      if (!run.empty()) parts.push_back({literal(run), Binding::Atom});
      run.clear();
    };
    for (const auto& item : items) {
      if (item.kind == RegexNode::Kind::Chars && item.chars.is_single()) {
        run.push_back(item.chars.ranges()[0].first);
        continue;
      }
      flush();
      if (item.kind == RegexNode::Kind::Empty) continue;
      parts.push_back(emit(item));
    }
    flush();
    if (parts.empty()) return {"\"\"", Binding::Atom};
    if (parts.size() == 1) return parts[0];
    std::string joined;
    for (const auto& p : parts) joined += (joined.empty() ? "" : " ") + parenthesized_unless(p, Binding::Seq);
    return {joined, Binding::Seq};
  }

  Expr emit_alt(const std::vector<RegexNode>& branches) const {
    std::string joined;
    for (const auto& b : branches) joined += (joined.empty() ? "" : " | ") + emit(b).text;
    return {joined, Binding::Alt};
  }

  Expr emit_repeat(const RegexNode& node) const {
    const int min = node.min, max = node.max;
    const std::optional<RegexNode> item = node.children[0];  // the matcher repeats items that may match nothing
    if (max == 0) return {"\"\"", Binding::Atom};
    // (x+)* is x*: a matcher would otherwise track every way of splitting a run of x.
    const bool outer_unbounded_or_optional = max == RegexNode::kUnbounded || (min == 0 && max == 1);
    if (item->kind == RegexNode::Kind::Repeat && item->max == RegexNode::kUnbounded && item->min <= 1 &&
        outer_unbounded_or_optional) {
      return emit_repeat(RegexNode::repeat(item->children[0], item->min * min, RegexNode::kUnbounded));
    }
    const std::string body = parenthesized_unless(emit(*item), Binding::Atom);
    if (min == 1 && max == 1) return emit(*item);
    if (min == 0 && max == 1) return {body + "?", Binding::Seq};
    if (min == 0 && max == RegexNode::kUnbounded) return {body + "*", Binding::Seq};
    if (min == 1 && max == RegexNode::kUnbounded) return {body + "+", Binding::Seq};
    std::string count = "{" + std::to_string(min);
    if (max == RegexNode::kUnbounded)
      count += ",";
    else if (max != min)
      count += "," + std::to_string(max);
    return {body + count + "}", Binding::Seq};
  }

  RegexText text_;
};

}  // namespace

std::string regex_to_gbnf_expression(std::string_view pattern, RegexText text) {
  return Emitter(text).emit(parse_regex(pattern)).text;
}

std::string regex_to_gbnf(std::string_view pattern) { return "root ::= " + regex_to_gbnf_expression(pattern) + "\n"; }

}  // namespace parley::structured
