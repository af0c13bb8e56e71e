// Small pieces of GBNF text shared by the converters (json_schema_grammar, regex_grammar): quoted
// literals, character classes over sets of code points, and UTF-8 decoding of their inputs.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace parley::structured {

inline constexpr char32_t kMaxCodepoint = 0x10FFFF;

// A set of Unicode code points as sorted, disjoint, non-adjacent inclusive ranges.
class CodepointSet {
 public:
  CodepointSet() = default;
  static CodepointSet single(char32_t c) { return range(c, c); }
  static CodepointSet range(char32_t lo, char32_t hi);
  static CodepointSet all() { return range(0, kMaxCodepoint); }

  void add(char32_t lo, char32_t hi);
  void add(const CodepointSet& other);
  CodepointSet complement() const;  // within [0, kMaxCodepoint]
  CodepointSet minus(const CodepointSet& other) const { return intersect(other.complement()); }
  CodepointSet intersect(const CodepointSet& other) const;
  bool contains(char32_t c) const;
  bool empty() const { return ranges_.empty(); }
  bool is_single() const { return ranges_.size() == 1 && ranges_[0].first == ranges_[0].second; }
  const std::vector<std::pair<char32_t, char32_t>>& ranges() const { return ranges_; }

 private:
  std::vector<std::pair<char32_t, char32_t>> ranges_;
};

// The set as one GBNF class, `[a-z_]`, or `[^...]` when the set reaches the top code point (shorter),
// or `.` for every code point. Surrogates never appear in the text. The set must not be empty.
std::string gbnf_class(const CodepointSet& set);

// A GBNF string literal whose content is exactly these bytes (UTF-8 passes through).
std::string gbnf_literal(std::string_view bytes);

void append_utf8(std::string& out, char32_t c);

struct DecodedChar {
  char32_t codepoint;
  size_t offset;  // byte offset in the input
};
// Throws GrammarError naming `what` and the byte offset on malformed UTF-8.
std::vector<DecodedChar> decode_utf8(std::string_view text, std::string_view what);

// A rule name made of GBNF name characters: anything else becomes '-'.
std::string sanitize_rule_name(std::string_view name);

}  // namespace parley::structured
