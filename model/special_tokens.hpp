// Special tokens in text: control and user-defined tokens are cut out of the text before it is
// split into words, leftmost-longest as Hugging Face's added-token matcher does, so a prompt that
// spells "<|im_start|>" gets that token. Also the set of tokens that end generation.
#pragma once
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/vocab.hpp"

namespace parley {

// A run of plain text (token < 0) or one special token.
struct TextSegment {
  std::string_view text;
  int token = -1;
};

class SpecialTokenMatcher {
 public:
  explicit SpecialTokenMatcher(const Vocab& vocab);
  // text as plain runs and special tokens, in order; the views point into text.
  std::vector<TextSegment> split(std::string_view text) const;

 private:
  struct Candidate {
    std::string_view piece;
    int id;
  };
  std::unordered_map<unsigned char, std::vector<Candidate>> by_first_byte_;  // longest first
};

// EOS, EOT, EOM and the tokens llama.cpp also treats as end of generation by their text
// (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, ...), each once, ascending.
std::vector<int> end_of_generation_ids(const Vocab& vocab);

}  // namespace parley
