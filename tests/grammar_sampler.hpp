// Random sentences of a compiled grammar (engine/structured_output/grammar.hpp), for tests that check
// everything a grammar can produce: a random alternative per rule, a random byte per byte set.
#pragma once
#include <random>
#include <string>
#include <vector>

#include "engine/structured_output/grammar.hpp"

namespace parley::structured {

// Past depth 40 the alternative with the fewest rule references is taken, so every walk ends.
inline void random_sentence_from(const Grammar& g, int rule, int depth, std::mt19937& rng, std::string& out) {
  const auto& alternatives = g.rules()[size_t(rule)].alternatives;
  auto rule_refs = [&](int start) {
    int n = 0;
    for (int i = start; g.elements()[size_t(i)].kind != GrammarElement::Kind::End; ++i) {
      n += g.elements()[size_t(i)].kind == GrammarElement::Kind::Rule;
    }
    return n;
  };
  int chosen = alternatives[rng() % alternatives.size()];
  if (depth > 40) {
    for (int start : alternatives) chosen = rule_refs(start) < rule_refs(chosen) ? start : chosen;
  }
  for (int i = chosen; g.elements()[size_t(i)].kind != GrammarElement::Kind::End; ++i) {
    const GrammarElement& e = g.elements()[size_t(i)];
    if (e.kind == GrammarElement::Kind::Rule) {
      random_sentence_from(g, e.index, depth + 1, rng, out);
      continue;
    }
    const ByteSet& bytes = g.byte_sets()[size_t(e.index)];
    std::vector<int> members;
    for (int b = 0; b < 256; ++b) {
      if (bytes[size_t(b)]) members.push_back(b);
    }
    out += char(members[rng() % members.size()]);
  }
}

inline void random_sentence(const Grammar& g, std::mt19937& rng, std::string& out) {
  random_sentence_from(g, g.root(), 0, rng, out);
}

}  // namespace parley::structured
