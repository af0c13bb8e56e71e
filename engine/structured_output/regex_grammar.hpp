// Regular expressions (the ECMAScript/Python subset that vLLM's structured_outputs.regex and JSON
// Schema's `pattern` use) turned into GBNF expressions for grammar.hpp.
//
// Supported: literals and escapes (\d \w \s \D \W \S \n \r \t \f \v \0 \xHH \uHHHH, escaped
// punctuation), classes with ranges, negation and class escapes, `.` (anything but \n \r \u2028
// \u2029), groups ( ), (?: ), named groups (?P<n> ) and (?<n> ) as plain groups, `|`, quantifiers * + ?
// {m} {m,} {m,n} and their lazy forms (a grammar has no match preference, so lazy is greedy), a leading
// ^ or \A and a trailing $, \Z or \z (ignored: the whole text is always matched). \d \w \s and `.`
// mean what they mean in ECMAScript (JSON Schema's regex dialect); Python's Unicode \d \w differ.
// Refused with GrammarError naming the construct and byte offset: backreferences, lookarounds, \b \B,
// anchors elsewhere, inline flags, possessive quantifiers, \p{..}, unbalanced parentheses, bad ranges,
// repetition counts above 10000 (the grammar's own limit).
#pragma once
#include <string>
#include <string_view>

namespace parley::structured {

// What the pattern's characters become in the grammar.
enum class RegexText {
  Raw,         // the characters themselves
  JsonString,  // their JSON string escapes, for the inside of a JSON string value ("a\"b" for a"b)
};

// A GBNF expression (no rule definitions) matching exactly the strings the whole pattern matches.
std::string regex_to_gbnf_expression(std::string_view pattern, RegexText text = RegexText::Raw);

// A whole grammar: `root ::= <the expression>`.
std::string regex_to_gbnf(std::string_view pattern);

}  // namespace parley::structured
