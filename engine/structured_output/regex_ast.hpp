// The parsed form of a regular expression (regex_grammar.hpp): what regex_parse.cpp builds and
// regex_grammar.cpp writes out as GBNF.
#pragma once
#include <string_view>
#include <vector>

#include "engine/structured_output/gbnf_text.hpp"

namespace parley::structured {

struct RegexNode {
  enum class Kind { Empty, Chars, Seq, Alt, Repeat };
  Kind kind = Kind::Empty;
  CodepointSet chars;               // Chars: one character from this set
  std::vector<RegexNode> children;  // Seq, Alt; Repeat: exactly one
  int min = 0, max = kUnbounded;    // Repeat

  static constexpr int kUnbounded = -1;
  static RegexNode of_chars(CodepointSet set);
  static RegexNode seq(std::vector<RegexNode> items);
  static RegexNode alt(std::vector<RegexNode> branches);
  static RegexNode repeat(RegexNode item, int min, int max);
};

// Parses a whole pattern; throws GrammarError naming the refused construct and its byte offset.
RegexNode parse_regex(std::string_view pattern);

bool matches_empty(const RegexNode& node);

}  // namespace parley::structured
