#include "engine/structured_output/grammar_builder.hpp"

#include <functional>

namespace parley::structured {

using Kind = GrammarElement::Kind;

int GrammarBuilder::rule_id(const std::string& name) {
  const auto [it, added] = ids_.emplace(name, int(grammar_.rules_.size()));
  if (added) {
    grammar_.rules_.push_back({name, {}});
    defined_.push_back(false);
  }
  return it->second;
}

void GrammarBuilder::define(int rule, const Alternatives& alternatives) {
  auto& starts = grammar_.rules_[size_t(rule)].alternatives;
  for (const Sequence& seq : alternatives) {
    starts.push_back(int(grammar_.elements_.size()));
    grammar_.elements_.insert(grammar_.elements_.end(), seq.begin(), seq.end());
    grammar_.elements_.push_back({Kind::End, -1});
  }
  defined_[size_t(rule)] = true;
}

GrammarElement GrammarBuilder::byte_set(const ByteSet& set) {
  const auto [it, added] = set_ids_.emplace(set.to_string(), int(grammar_.byte_sets_.size()));
  if (added) grammar_.byte_sets_.push_back(set);
  return {Kind::Bytes, it->second};
}

int GrammarBuilder::anonymous_rule(const std::string& base, const Alternatives& alternatives) {
  const int rule = rule_id(base + "#" + std::to_string(++next_anonymous_));  // '#' is in no GBNF name
  define(rule, alternatives);
  return rule;
}

void GrammarBuilder::append_code_point(Sequence& seq, uint32_t code_point) {
  for (const ByteRangeSequence& bytes : utf8_sequences(CodepointSet::single(code_point)))
    for (const auto& [lo, hi] : bytes) {
      ByteSet set;
      for (int b = lo; b <= hi; ++b) set.set(size_t(b));
      seq.push_back(byte_set(set));
    }
}

// Single-byte characters share one set; each multi-byte range sequence is an alternative of its own.
void GrammarBuilder::append_class(Sequence& seq, const CodepointSet& set, const std::string& base) {
  ByteSet ascii;
  Alternatives alternatives;
  for (const ByteRangeSequence& bytes : utf8_sequences(set)) {
    if (bytes.size() == 1) {
      for (int b = bytes[0].first; b <= bytes[0].second; ++b) ascii.set(size_t(b));
      continue;
    }
    Sequence alt;
    for (const auto& [lo, hi] : bytes) {
      ByteSet set;
      for (int b = lo; b <= hi; ++b) set.set(size_t(b));
      alt.push_back(byte_set(set));
    }
    alternatives.push_back(std::move(alt));
  }
  if (alternatives.empty()) {  // an empty class stays an empty set: it matches nothing
    seq.push_back(byte_set(ascii));
    return;
  }
  if (ascii.any()) alternatives.insert(alternatives.begin(), Sequence{byte_set(ascii)});
  seq.push_back({Kind::Rule, anonymous_rule(base, alternatives)});
}

void GrammarBuilder::append_group(Sequence& seq, Alternatives alternatives, const std::string& base) {
  if (alternatives.size() == 1)
    seq.insert(seq.end(), alternatives[0].begin(), alternatives[0].end());
  else
    seq.push_back({Kind::Rule, anonymous_rule(base, alternatives)});
}

GrammarElement GrammarBuilder::as_one_element(const Sequence& item, const std::string& base) {
  return item.size() == 1 ? item[0] : GrammarElement{Kind::Rule, anonymous_rule(base, {item})};
}

// x{m,n}: m copies of x, then a chain of n-m nested optionals (opt_k ::= x opt_k-1 | ""), or for an
// unbounded max a right-recursive star (star ::= x star | ""), which the matcher runs in constant stack.
void GrammarBuilder::repeat(Sequence& seq, size_t from, int min, int max, const std::string& base) {
  const Sequence item(seq.begin() + long(from), seq.end());
  seq.erase(seq.begin() + long(from), seq.end());
  if (max == 0) return;
  const GrammarElement x = as_one_element(item, base);
  for (int i = 0; i < min; ++i) seq.push_back(x);
  if (max == -1) {
    const int star = rule_id(base + "#" + std::to_string(++next_anonymous_));
    define(star, {{x, {Kind::Rule, star}}, {}});
    seq.push_back({Kind::Rule, star});
    return;
  }
  if (max == min) return;
  int tail = anonymous_rule(base, {{x}, {}});
  for (int k = 1; k < max - min; ++k) tail = anonymous_rule(base, {{x, {Kind::Rule, tail}}, {}});
  seq.push_back({Kind::Rule, tail});
}

// A rule that can reach itself before consuming a byte through a call that is not its alternative's last
// element would make the matcher's stacks grow forever. Calls in tail position push nothing (a star's
// `x star`), so cycles of those alone are fine: the matcher sees the same stack again and stops.
void GrammarBuilder::check_left_recursion(const std::vector<bool>& nullable) const {
  const auto& rules = grammar_.rules_;
  const auto& elements = grammar_.elements_;
  struct Call {
    int callee;
    bool tail;
  };
  std::vector<std::vector<Call>> left_calls(rules.size());
  for (size_t r = 0; r < rules.size(); ++r)
    for (int start : rules[r].alternatives)
      for (int p = start; elements[size_t(p)].kind == Kind::Rule; ++p) {
        const int callee = elements[size_t(p)].index;
        left_calls[r].push_back({callee, elements[size_t(p) + 1].kind == Kind::End});
        if (!nullable[size_t(callee)]) break;
      }
  // For each call that pushes a frame, can the callee get back to the caller without consuming a byte?
  for (size_t r = 0; r < rules.size(); ++r)
    for (const Call& call : left_calls[r]) {
      if (call.tail) continue;
      std::vector<int> parent(rules.size(), -2);
      std::vector<int> queue = {call.callee};
      parent[size_t(call.callee)] = -1;
      for (size_t q = 0; q < queue.size(); ++q) {
        const int at = queue[q];
        if (at == int(r)) {  // the path callee -> ... -> r, read back through the parents
          std::string cycle = rules[r].name;
          for (int back = parent[size_t(at)]; back != -1; back = parent[size_t(back)])
            cycle = rules[size_t(back)].name + " -> " + cycle;
          throw GrammarError("grammar: left recursion (" + rules[r].name + " -> " + cycle +
                             "): a rule reaches itself before matching any character");
        }
        for (const Call& next : left_calls[size_t(at)])
          if (parent[size_t(next.callee)] == -2) parent[size_t(next.callee)] = at, queue.push_back(next.callee);
      }
    }
}

Grammar GrammarBuilder::finish(const std::string& root_name) {
  const auto root = ids_.find(root_name);
  if (root == ids_.end() || !defined_[size_t(root->second)])
    throw GrammarError("grammar: no '" + root_name + "' rule (the start rule)");
  for (size_t r = 0; r < defined_.size(); ++r)
    if (!defined_[r]) throw GrammarError("grammar: rule '" + grammar_.rules_[r].name + "' is used but not defined");
  grammar_.root_ = root->second;

  // Fixed points: which rules can match the empty string, and which can match anything at all.
  const auto& rules = grammar_.rules_;
  const auto& elements = grammar_.elements_;
  auto fixed_point = [&](auto element_ok) {
    std::vector<bool> ok(rules.size(), false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < rules.size(); ++r) {
        if (ok[r]) continue;
        for (int start : rules[r].alternatives) {
          int p = start;
          while (elements[size_t(p)].kind != Kind::End && element_ok(elements[size_t(p)], ok)) ++p;
          if (elements[size_t(p)].kind == Kind::End) {
            ok[r] = changed = true;
            break;
          }
        }
      }
    }
    return ok;
  };
  const std::vector<bool> nullable = fixed_point(
      [](const GrammarElement& e, const std::vector<bool>& ok) { return e.kind == Kind::Rule && ok[size_t(e.index)]; });
  const std::vector<bool> productive = fixed_point([&](const GrammarElement& e, const std::vector<bool>& ok) {
    return e.kind == Kind::Rule ? ok[size_t(e.index)] : grammar_.byte_sets_[size_t(e.index)].any();
  });
  if (!productive[size_t(grammar_.root_)])
    throw GrammarError("grammar: '" + root_name + "' can never be completed (it matches no text)");
  check_left_recursion(nullable);
  return std::move(grammar_);
}

}  // namespace parley::structured
