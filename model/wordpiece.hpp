// WordPiece (GGUF tokenizer.ggml.model = "bert"): Hugging Face's BertNormalizer and BertPreTokenizer cut the
// text into words, then each word becomes its longest vocabulary pieces, left to right (the WordPiece model),
// over the pieces as llama.cpp's converter spells them ("▁play" starts a word, "ing" continues one).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/vocab.hpp"

namespace parley {

struct BertNormalizerOptions {
  bool lowercase = true;
  bool strip_accents = true;
};

// BERT's words: control characters, NUL and U+FFFD dropped; whitespace splits; each punctuation character
// (Unicode P*, and every ASCII symbol) and CJK ideograph is a word of its own; accents stripped (NFD, then
// nonspacing marks dropped) and letters lowercased as the options say. Invalid UTF-8 bytes are dropped.
std::vector<std::string> bert_words(std::string_view text, const BertNormalizerOptions& options);

class WordPiece {
 public:
  // A word of more characters than this is one unknown token (Hugging Face's max_input_chars_per_word).
  static constexpr std::size_t kMaxWordChars = 100;

  explicit WordPiece(const Vocab& vocab);

  // Appends the ids of text (special tokens already split off by the caller).
  void encode(std::string_view text, std::vector<int>& out) const;

  // A piece's text as llama.cpp decodes it: each U+2581 a space (" play", "ing").
  static std::string piece_text(std::string_view piece);

 private:
  // The word's pieces, or the unknown token when some part of it matches no piece.
  void encode_word(const std::string& word, std::vector<int>& out) const;

  BertNormalizerOptions normalizer_;
  std::unordered_map<std::string, int> piece_to_id_;  // the vocabulary's spelling -> first id
  std::size_t longest_piece_ = 0;                     // in bytes, the U+2581 prefix included
  int unk_id_ = -1;
};

}  // namespace parley
