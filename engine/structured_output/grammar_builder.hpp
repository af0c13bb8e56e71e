// Builds a Grammar's rules: the GBNF reader's back end, and the place the termination checks live
// (undefined rules, left recursion, a root that can never complete).
#pragma once
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/structured_output/grammar.hpp"
#include "engine/structured_output/utf8_ranges.hpp"

namespace parley::structured {

class GrammarBuilder {
 public:
  using Sequence = std::vector<GrammarElement>;  // without the End
  using Alternatives = std::vector<Sequence>;

  int rule_id(const std::string& name);  // creates an undefined rule on first use
  bool is_defined(int rule) const { return defined_[size_t(rule)]; }
  void define(int rule, const Alternatives& alternatives);

  void append_code_point(Sequence& seq, uint32_t code_point);
  void append_class(Sequence& seq, const CodepointSet& set, const std::string& base);
  void append_group(Sequence& seq, Alternatives alternatives, const std::string& base);
  // Replaces seq[from..] (one item) by min..max (-1: unbounded) repetitions of it.
  void repeat(Sequence& seq, size_t from, int min, int max, const std::string& base);

  // The grammar with `root_name` as its start; throws GrammarError when it cannot be matched safely.
  Grammar finish(const std::string& root_name);

 private:
  GrammarElement byte_set(const ByteSet& set);
  int anonymous_rule(const std::string& base, const Alternatives& alternatives);
  GrammarElement as_one_element(const Sequence& item, const std::string& base);
  void check_left_recursion(const std::vector<bool>& nullable) const;

  Grammar grammar_;
  std::vector<bool> defined_;
  std::unordered_map<std::string, int> ids_;
  std::map<std::string, int> set_ids_;  // a set's bits as text: interned, so equal sets share an index
  int next_anonymous_ = 0;
};

}  // namespace parley::structured
