// The GBNF engine: parsing, byte-level matching of characters and classes, repetitions, and the
// checks that refuse grammars the matcher could not run.
#include <catch2/catch.hpp>

#include <random>
#include <regex>

#include "engine/structured_output/grammar.hpp"
#include "engine/structured_output/pushdown.hpp"
#include "engine/structured_output/utf8_ranges.hpp"

using Catch::Contains;
using parley::structured::Grammar;
using parley::structured::GrammarError;

namespace {

bool matches(const char* gbnf, std::string_view text) { return Grammar::parse(gbnf).matches(text); }

std::string error_of(const char* gbnf) {
  try {
    Grammar::parse(gbnf);
  } catch (const GrammarError& e) {
    return e.what();
  }
  return "";
}

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80)
    s += char(cp);
  else if (cp < 0x800)
    s += char(0xC0 | cp >> 6), s += char(0x80 | (cp & 0x3F));
  else if (cp < 0x10000)
    s += char(0xE0 | cp >> 12), s += char(0x80 | ((cp >> 6) & 0x3F)), s += char(0x80 | (cp & 0x3F));
  else
    s += char(0xF0 | cp >> 18), s += char(0x80 | ((cp >> 12) & 0x3F)), s += char(0x80 | ((cp >> 6) & 0x3F)),
        s += char(0x80 | (cp & 0x3F));
  return s;
}

}  // namespace

TEST_CASE("A grammar of literals and alternatives matches exactly its sentences", "[grammar]") {
  const char* g = R"(root ::= "yes" | "no" | "maybe" " so")";
  for (const char* ok : {"yes", "no", "maybe so"}) CHECK(matches(g, ok));
  for (const char* bad : {"", "ye", "yess", "maybe", "maybeso", "no "}) CHECK_FALSE(matches(g, bad));
}

TEST_CASE("Rules refer to each other across lines and comments", "[grammar]") {
  const char* g = R"(# a list of digits
root ::= "[" items? "]"   # brackets
items ::= digit ("," digit)*
digit ::= [0-9]
)";
  for (const char* ok : {"[]", "[1]", "[1,2,3]"}) CHECK(matches(g, ok));
  for (const char* bad : {"[", "[1,]", "[,1]", "[12]", "1"}) CHECK_FALSE(matches(g, bad));
}

TEST_CASE("Bounded repetitions count exactly", "[grammar]") {
  const char* g = R"(root ::= "a"{2,4} "b"{3} "c"{1,})";
  for (int a = 0; a <= 6; ++a)
    for (int b = 0; b <= 4; ++b)
      for (int c = 0; c <= 2; ++c) {
        const std::string text =
            std::string(size_t(a), 'a') + std::string(size_t(b), 'b') + std::string(size_t(c), 'c');
        CHECK(matches(g, text) == (a >= 2 && a <= 4 && b == 3 && c >= 1));
      }
}

TEST_CASE("Character classes match the UTF-8 encoding of exactly their code points", "[grammar]") {
  const auto g = Grammar::parse(R"(root ::= [a-c\u00e9\u4e00-\u4e05\U0001F600] [^"\\\x00-\x1f])");
  std::mt19937 rng(7);
  std::vector<uint32_t> probes = {'a',     'c',  'd',  0xe9,  0xe8,  0x4e00, 0x4e05,  0x4e06,  0x1F600,
                                  0x1F601, 0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF};
  for (int i = 0; i < 300; ++i) probes.push_back(rng() % 0x110000);
  for (uint32_t cp : probes) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const bool in_first = (cp >= 'a' && cp <= 'c') || cp == 0xe9 || (cp >= 0x4e00 && cp <= 0x4e05) || cp == 0x1F600;
    const bool in_second = cp != '"' && cp != '\\' && cp > 0x1f;
    CHECK(g.matches(utf8(cp) + "x") == in_first);
    CHECK(g.matches("a" + utf8(cp)) == in_second);
  }
  CHECK_FALSE(g.matches("a\xC3"));          // a truncated sequence
  CHECK_FALSE(g.matches("a\xED\xA0\x80"));  // a surrogate's encoding
  CHECK_FALSE(g.matches("a\xC0\xAF"));      // an overlong encoding
}

TEST_CASE("Any character is one whole code point", "[grammar]") {
  const auto g = Grammar::parse("root ::= . .");
  CHECK(g.matches("ab"));
  CHECK(g.matches(utf8(0x4e2d) + utf8(0x1F600)));
  CHECK_FALSE(g.matches("abc"));
  CHECK_FALSE(g.matches(utf8(0x4e2d)));
}

TEST_CASE("Rules that match nothing inside repetitions terminate", "[grammar]") {
  const char* g = R"(root ::= (maybe)* "x"
maybe ::= "a"?)";
  for (const char* ok : {"x", "ax", "aaax"}) CHECK(matches(g, ok));
  CHECK_FALSE(matches(g, "a"));
}

TEST_CASE("Recursion nests brackets to any depth", "[grammar]") {
  const auto g = Grammar::parse(R"(root ::= value
value ::= "[" (value ("," value)*)? "]" | "1")");
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "[";
  deep += "1";
  for (int i = 0; i < 200; ++i) deep += "]";
  CHECK(g.matches(deep));
  CHECK(g.matches("[1,[1,[]],[[1]]]"));
  CHECK_FALSE(g.matches(deep + "]"));
  CHECK_FALSE(g.matches("[1,[1,[]],[[1]]"));
}

TEST_CASE("A long star stays one state per position", "[grammar]") {
  auto grammar = std::make_shared<const Grammar>(Grammar::parse(R"(root ::= "\"" [a-z]* "\"")"));
  parley::structured::PushdownAutomaton automaton(grammar);
  int state = automaton.advance(automaton.initial_state(), "\"");
  const size_t states = automaton.num_states(), stacks = automaton.num_stacks();
  state = automaton.advance(state, std::string(5000, 'q'));
  CHECK(automaton.num_states() <= states + 1);
  CHECK(automaton.num_stacks() <= stacks + 2);
  CHECK_FALSE(automaton.accepting(state));
  state = automaton.advance(state, "\"");
  CHECK(automaton.accepting(state));
  CHECK_FALSE(automaton.can_continue(state));
}

TEST_CASE("Bad grammars are refused naming the problem", "[grammar]") {
  CHECK_THAT(error_of("root ::= \"a"), Contains("unterminated string literal"));
  CHECK_THAT(error_of("root ::= foo"), Contains("rule 'foo' is used but not defined"));
  CHECK_THAT(error_of("start ::= \"a\""), Contains("no 'root' rule"));
  CHECK_THAT(error_of("root ::= root \"a\" | \"b\""), Contains("left recursion (root -> root)"));
  CHECK_THAT(error_of("root ::= x \"a\"\nx ::= \"\" | root"), Contains("left recursion"));
  CHECK_THAT(error_of("root ::= \"a\" root"), Contains("can never be completed"));
  CHECK_THAT(error_of("root ::= [b-a]"), Contains("out of order"));
  CHECK_THAT(error_of("root ::= \"a\"{3,2}"), Contains("max < min"));
  CHECK_THAT(error_of("root ::= ( \"a\""), Contains("expected ')'"));
  CHECK_THAT(error_of("root ::= \"a\"\nroot ::= \"b\""), Contains("defined twice at line 2"));
  CHECK_THAT(error_of("root ::= \"\\q\""), Contains("unknown escape"));
  CHECK_THAT(error_of("root ::= * \"a\""), Contains("follows nothing"));
}

TEST_CASE("Grammars agree with std::regex on random strings", "[grammar]") {
  // The same language written as a grammar and as an ECMAScript regex (a reference nobody here wrote).
  const auto g = Grammar::parse(R"(root ::= ("ab" | [c-e]+)? "x"{1,3} ([0-9] "-")*)");
  const std::regex re("(ab|[c-e]+)?x{1,3}([0-9]-)*");
  std::mt19937 rng(11);
  const std::string alphabet = "abcdex1-";
  int agreed_matches = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    for (size_t n = rng() % 9; n > 0; --n) s += alphabet[rng() % alphabet.size()];
    const bool expected = std::regex_match(s, re);
    CHECK(g.matches(s) == expected);
    agreed_matches += expected;
  }
  CHECK(agreed_matches > 50);
}
