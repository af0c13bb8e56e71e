// Regex to GBNF (engine/structured_output/regex_grammar.hpp): the text written, the constructs refused,
// and the language accepted, against std::regex (ECMAScript) as the oracle on random strings.
#include <catch2/catch.hpp>
#include <algorithm>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "engine/structured_output/gbnf_text.hpp"
#include "engine/structured_output/grammar.hpp"
#include "engine/structured_output/regex_grammar.hpp"
#include "tests/grammar_sampler.hpp"

using namespace parley::structured;
using Catch::Matchers::Contains;

namespace {

// Random strings over the characters the patterns below care about, with lengths up to max_length.
std::vector<std::string> random_strings(const std::string& alphabet, size_t count, size_t max_length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    std::string s(rng() % (max_length + 1), ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    out.push_back(s);
  }
  return out;
}

// wchar_t holds a code point on Linux, so std::wregex reads code points as the grammar does.
std::wstring utf32(const std::string& utf8) {
  std::wstring out;
  for (const auto& c : decode_utf8(utf8, "test text")) out += wchar_t(c.codepoint);
  return out;
}

}  // namespace

TEST_CASE("literals become one GBNF string and classes keep their ranges", "[regex]") {
  CHECK(regex_to_gbnf_expression("abc") == "\"abc\"");
  CHECK(regex_to_gbnf_expression("[a-z0-9_]{2,5}") == "[0-9_a-z]{2,5}");
  CHECK(regex_to_gbnf_expression("\\d{3}-\\d{4}") == "[0-9]{3} \"-\" [0-9]{4}");
  CHECK(regex_to_gbnf_expression("a|b|c") == "\"a\" | \"b\" | \"c\"");
  CHECK(regex_to_gbnf("x+") == "root ::= \"x\"+\n");
}

TEST_CASE("anchors at the ends and group names and laziness change nothing", "[regex]") {
  CHECK(regex_to_gbnf_expression("^ab$") == "\"ab\"");
  CHECK(regex_to_gbnf_expression("(?P<first>a)(?<second>b)(?:c)") == "\"abc\"");
  CHECK(regex_to_gbnf_expression("a*?b+?c??") == regex_to_gbnf_expression("a*b+c?"));
}

TEST_CASE("inside a JSON string quotes and backslashes and newlines are written as escapes", "[regex]") {
  CHECK(regex_to_gbnf_expression("a\"b", RegexText::JsonString) == "\"a\\\\\\\"b\"");
  CHECK(regex_to_gbnf_expression("\\\\", RegexText::JsonString) == "\"\\\\\\\\\"");
  CHECK(regex_to_gbnf_expression("\\n", RegexText::JsonString) == "\"\\\\n\"");
  CHECK(regex_to_gbnf_expression("[a\"]", RegexText::JsonString) == "\"a\" | \"\\\\\\\"\"");
}

TEST_CASE("refused constructs are named with their offset", "[regex]") {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"a(?=b)", "lookahead and lookbehind are not supported at offset 2"},
      {"a(?!b)", "lookahead and lookbehind are not supported at offset 2"},
      {"(?<=a)b", "lookahead and lookbehind are not supported at offset 1"},
      {"(?<!a)b", "lookahead and lookbehind are not supported at offset 1"},
      {"(a)\\1", "a backreference is not supported at offset 3"},
      {"(?P<x>a)(?P=x)", "a backreference is not supported at offset 9"},
      {"a\\bc", "a word boundary (\\b) is not supported at offset 1"},
      {"a^b", "an anchor in the middle of the pattern is not supported at offset 1"},
      {"a$b", "an anchor in the middle of the pattern is not supported at offset 1"},
      {"(a", "unbalanced '(' at offset 0"},
      {"a)", "unbalanced ')' at offset 1"},
      {"[z-a]", "a bad range in a character class (its start is above its end) at offset 1"},
      {"[\\d-z]", "a bad range in a character class at offset 1"},
      {"[abc", "an unterminated character class at offset 0"},
      {"*a", "nothing to repeat before a quantifier at offset 0"},
      {"a**", "a quantifier on a quantifier is not supported at offset 2"},
      {"a{3,1}", "a bad repetition range {3,1} at offset 1"},
      {"(?i)a", "inline flags and other '(?' groups are not supported at offset 1"},
      {"a*+", "a possessive quantifier is not supported at offset 2"},
      {"\\p{L}", "a Unicode property escape is not supported at offset 0"},
      {"[]a]", "an empty class"},
      {"a{,3}", "'{,n}'"},
      {"a{10001}", "a repetition count above 10000 is not supported at offset 1"},
  };
  for (const auto& [pattern, message] : refused) {
    INFO(pattern);
    CHECK_THROWS_AS(regex_to_gbnf(pattern), GrammarError);
    CHECK_THROWS_WITH(regex_to_gbnf(pattern), Contains(message));
  }
}

TEST_CASE("every regex grammar is accepted by the grammar parser", "[regex]") {
  for (const char* pattern : {"abc", "a|b|", "(a*)*", "[^\"\\\\]+", ".", "\\s\\S\\w\\W\\d\\D", "[\\b]", "x{a}", "",
                              "\\u00e9[\\u00e0-\\u00f6]", "\\x00\\t", "(a|bc){2,}"}) {
    INFO(pattern);
    CHECK_NOTHROW(Grammar::parse(regex_to_gbnf(pattern)));
    CHECK_NOTHROW(Grammar::parse("root ::= " + regex_to_gbnf_expression(pattern, RegexText::JsonString)));
  }
}

TEST_CASE("regex grammars accept exactly what std::regex matches on random strings", "[regex]") {
  struct Case {
    const char* pattern;
    const char* alphabet;
    const char* example;  // a match, whose mutations probe the boundary of the language
  };
  const std::vector<Case> cases = {
      {"abc", "abc", "abc"},
      {"a|bc|", "abc", "bc"},
      {"(ab|c)*d?", "abcd", "abcabd"},
      {"a{2,4}b{0,2}", "ab", "aaab"},
      {"(a|b){3}", "abc", "bab"},
      {"[a-c]+[^a-c]", "abcdx", "cax"},
      {"(a*b*)*c", "abc", "abbac"},
      {"x(a?b?){2}y", "abxy", "xabay"},
      {"(a*)*", "ab", "aa"},  // repetitions of what may match nothing: the matcher repeats them as they are
      {"(a?b?)+", "abc", "abba"},
      {"(a|)*", "ab", "aaa"},
      {"(a?){2,3}", "ab", "aa"},
      {"\\d+(\\.\\d{1,2})?", "01239.x", "10.25"},
      {"[\\w-]+@[a-z]+\\.(com|org)", "ab_-@.comorgx1", "a-b@co.org"},
      {"\\s*\\S+\\s*", " \t\nab", " ab\t"},
      {"\\W\\D", "a1 .-", " ."},
      {".+", "ab\n\r.", "a.b"},
      {"(?:ab)+|b(?:a|)", "ab", "abab"},
      {"[.*+?]{1,3}", ".*+?a", "+?"},
      {"[-a]b[a-]", "-ab", "-ba"},
      {"\\x41[\\u0042-D]\\t", "ABCDE\t", "AC\t"},
  };
  std::mt19937 rng(17);
  for (const auto& c : cases) {
    INFO(c.pattern);
    const std::regex oracle(c.pattern, std::regex::ECMAScript);
    const std::wregex wide_oracle(utf32(c.pattern), std::regex::ECMAScript);
    const Grammar grammar = Grammar::parse(regex_to_gbnf(c.pattern));
    const std::string alphabet = c.alphabet;
    std::vector<std::string> texts = random_strings(alphabet, 600, 7, rng());
    for (int i = 0; i < 600; ++i) {  // one to three random edits of the example
      std::string s = c.example;
      for (int edits = 1 + int(rng() % 3); edits > 0; --edits) {
        const size_t at = s.empty() ? 0 : rng() % s.size();
        const char replacement = alphabet[rng() % alphabet.size()];
        switch (rng() % 3) {
          case 0:
            if (!s.empty()) s[at] = replacement;
            break;
          case 1:
            s.insert(s.begin() + long(at), replacement);
            break;
          default:
            if (!s.empty()) s.erase(at, 1);
            break;
        }
      }
      texts.push_back(s);
    }
    texts.push_back(c.example);
    int accepted = 0;
    for (const auto& s : texts) {
      INFO("text: '" << s << "'");
      const bool expected = std::regex_match(s, oracle);
      CHECK(grammar.matches(s) == expected);
      accepted += expected;
    }
    CHECK(accepted > 1);             // the strings exercise both answers
    for (int i = 0; i < 200; ++i) {  // and everything the grammar produces is a match
      std::string sentence;
      random_sentence(grammar, rng, sentence);
      // \s is ECMAScript's (Unicode spaces too), std::wregex's the C locale's (ASCII): compare on ASCII.
      const bool ascii = std::all_of(sentence.begin(), sentence.end(), [](char ch) { return (ch & 0x80) == 0; });
      if (std::string_view(c.pattern).find("\\s") != std::string_view::npos && !ascii) continue;
      INFO("sentence: '" << sentence << "'");
      CHECK(std::regex_match(utf32(sentence), wide_oracle));  // std::regex reads bytes, the grammar code points
    }
  }
}

TEST_CASE("a JSON string pattern accepts the escaped form of what the pattern matches", "[regex]") {
  const Grammar quoted =
      Grammar::parse("root ::= " + regex_to_gbnf_expression("a\"[\\\\\\n]*.", RegexText::JsonString));
  CHECK(quoted.matches("a\\\"\\\\\\nx"));  // a\"\\\nx is the JSON text of a"\<newline>x
  CHECK(quoted.matches("a\\\"\\\""));
  CHECK_FALSE(quoted.matches("a\"x"));      // a raw quote would end the JSON string
  CHECK_FALSE(quoted.matches("a\\\"\\n"));  // `.` does not match a newline
}
