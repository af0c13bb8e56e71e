// The vocabulary as the grammar sees it: each token's bytes in the output text, in a trie laid out in
// preorder, so one walk per grammar state visits every token and skips a whole subtree at the first
// byte the grammar refuses (a prefix shared by thousands of tokens is checked once).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/tokenizer.hpp"

namespace parley::structured {

class GrammarVocabulary {
 public:
  // Control, unknown and unused tokens, and tokens with no bytes, are never allowed by a grammar.
  explicit GrammarVocabulary(const Tokenizer& tokenizer);
  explicit GrammarVocabulary(const std::vector<std::optional<std::string>>& token_bytes);

  int size() const { return size_; }
  const std::optional<std::string>& bytes(int token) const { return bytes_[size_t(token)]; }

  struct TrieNode {
    uint8_t byte;
    int depth;         // 1 for a first byte
    int subtree_end;   // the index after this node's last descendant
    int tokens_begin;  // tokens ending here: trie_tokens()[tokens_begin, tokens_end)
    int tokens_end;
  };
  const std::vector<TrieNode>& trie() const { return trie_; }
  const std::vector<int>& trie_tokens() const { return trie_tokens_; }
  int max_depth() const { return max_depth_; }

 private:
  void build_trie();

  int size_ = 0;
  std::vector<std::optional<std::string>> bytes_;
  std::vector<TrieNode> trie_;
  std::vector<int> trie_tokens_;
  int max_depth_ = 0;
};

}  // namespace parley::structured
