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
#include <bitset>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace parley::structured {

// A grammar that cannot be used: a syntax error (with line and column), an undefined rule, left
// recursion, a root that matches no text. The message names the rule.
struct GrammarError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// One element of a compiled alternative: one byte out of a set, a reference to a rule, or the alternative's end.
struct GrammarElement {
  enum class Kind : uint8_t { Bytes, Rule, End };
  Kind kind = Kind::End;
  int index = -1;  // Bytes: into Grammar::byte_sets(); Rule: into Grammar::rules()
};
using ByteSet = std::bitset<256>;

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
  const std::vector<ByteSet>& byte_sets() const { return byte_sets_; }
  int root() const { return root_; }

 private:
  friend class GrammarBuilder;
  std::vector<Rule> rules_;
  std::vector<GrammarElement> elements_;
  std::vector<ByteSet> byte_sets_;
  int root_ = -1;
};

}  // namespace parley::structured
