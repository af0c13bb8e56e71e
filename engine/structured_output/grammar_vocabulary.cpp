#include "engine/structured_output/grammar_vocabulary.hpp"

#include <algorithm>
#include <numeric>

namespace parley::structured {

GrammarVocabulary::GrammarVocabulary(const Tokenizer& tokenizer) : size_(tokenizer.vocab().size()) {
  const Vocab& vocab = tokenizer.vocab();
  bytes_.resize(size_t(size_));
  for (int t = 0; t < size_; ++t) {
    const TokenType type = vocab.types.empty() ? TokenType::Normal : vocab.types[size_t(t)];
    if (type == TokenType::Control || type == TokenType::Unknown || type == TokenType::Unused) continue;
    std::string b = tokenizer.token_bytes(-1, t);  // mid-text bytes: no BOS before an output token
    if (!b.empty()) bytes_[size_t(t)] = std::move(b);
  }
  build_trie();
}

GrammarVocabulary::GrammarVocabulary(const std::vector<std::optional<std::string>>& token_bytes)
    : size_(int(token_bytes.size())), bytes_(token_bytes) {
  for (auto& b : bytes_)
    if (b && b->empty()) b.reset();
  build_trie();
}

// Sorted byte strings give the trie in preorder: each string adds the nodes past its common prefix
// with the previous one.
void GrammarVocabulary::build_trie() {
  std::vector<int> order;
  for (int t = 0; t < size_; ++t)
    if (bytes_[size_t(t)]) order.push_back(t);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return *bytes_[size_t(a)] < *bytes_[size_t(b)]; });
  std::vector<int> path;  // node index per depth along the current string
  const std::string* prev = nullptr;
  for (int t : order) {
    const std::string& s = *bytes_[size_t(t)];
    size_t common = 0;
    if (prev)
      while (common < s.size() && common < prev->size() && s[common] == (*prev)[common]) ++common;
    if (prev && common == s.size() && s.size() == prev->size()) {  // the same bytes as the previous token
      trie_tokens_.push_back(t);
      ++trie_[size_t(path.back())].tokens_end;
      continue;
    }
    path.resize(common);
    for (size_t d = common; d < s.size(); ++d) {
      path.push_back(int(trie_.size()));
      const int here = int(trie_tokens_.size());
      trie_.push_back({uint8_t(s[d]), int(d + 1), 0, here, here});
    }
    trie_tokens_.push_back(t);
    ++trie_.back().tokens_end;
    max_depth_ = std::max(max_depth_, int(s.size()));
    prev = &s;
  }
  // A node's subtree ends at the next node no deeper than it.
  std::vector<int> open;
  for (int i = 0; i < int(trie_.size()); ++i) {
    while (!open.empty() && trie_[size_t(open.back())].depth >= trie_[size_t(i)].depth) {
      trie_[size_t(open.back())].subtree_end = i;
      open.pop_back();
    }
    open.push_back(i);
  }
  for (int i : open) trie_[size_t(i)].subtree_end = int(trie_.size());
}

}  // namespace parley::structured
