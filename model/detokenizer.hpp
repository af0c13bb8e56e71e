// Incremental detokenization: turns a token stream into text that never splits a UTF-8 sequence.
#pragma once
#include <string>

#include "model/tokenizer.hpp"

namespace parley {

class IncrementalDetokenizer {
 public:
  // prev_token is the token before the first pushed one (e.g. the prompt's last), -1 for none. special_text:
  // control tokens decode to their text (vLLM's skip_special_tokens=False).
  IncrementalDetokenizer(const Tokenizer& tokenizer, int prev_token = -1, bool special_text = false);

  // Appends a token and returns the newly completed text: the longest prefix of pending bytes
  // that is whole UTF-8. An invalid sequence becomes U+FFFD as soon as it is known to be invalid.
  std::string push(int token);
  // End of stream: returns what is pending, an incomplete tail replaced by U+FFFD.
  std::string flush();

 private:
  const Tokenizer* tokenizer_;
  int prev_;
  bool special_text_;
  std::string pending_;
};

}  // namespace parley
