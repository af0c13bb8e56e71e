// A context-free grammar in llama.cpp's GBNF syntax, compiled to byte-level rules that a pushdown
// matcher (grammar_matcher.hpp) walks. No Debian package offers a grammar engine for token masks, so
// this one is written here: rules of alternatives of sequences, every character class lowered to
// alternatives of UTF-8 byte ranges, so the matcher never needs a partial-UTF-8 state.
//
// Syntax (llama.cpp's grammars/README.md): `name ::= expr` (names: letters, digits, '-', '_'),
// "literal" (escapes \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH), [a-z0-9] and [^...] classes, `.` any
// character, ( ) groups, `|`, postfix * + ? {m} {m,} {m,n}, comments from '#' to the end of the line.
// The start rule is `root`.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace parley::structured {

// A grammar that cannot be used: a syntax error (with line and column), an undefined rule, left
// recursion, a repetition of something that can match nothing. The message names the rule.
struct GrammarError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// One element of a compiled alternative: a byte range, a reference to a rule, or the alternative's end.
struct GrammarElement {
  enum class Kind : uint8_t { Bytes, Rule, End };
  Kind kind;
  uint8_t lo = 0, hi = 0;  // Bytes: lo..hi inclusive
  int rule = -1;           // Rule: index into Grammar::rules
};

class Grammar {
 public:
  // Parses GBNF text. Throws GrammarError.
  static Grammar parse(std::string_view gbnf);

  // Whether the whole of `text` (bytes) is a sentence of the grammar: a plain recogniser for tests and
  // for checking outputs, independent of any vocabulary.
  bool matches(std::string_view text) const;

  struct Rule {
    std::string name;
    std::vector<int> alternatives;  // start positions in elements(), each alternative ends with an End
  };
  const std::vector<Rule>& rules() const { return rules_; }
  const std::vector<GrammarElement>& elements() const { return elements_; }
  int root() const { return root_; }

 private:
  friend class GrammarBuilder;
  std::vector<Rule> rules_;
  std::vector<GrammarElement> elements_;
  int root_ = -1;
};

}  // namespace parley::structured
