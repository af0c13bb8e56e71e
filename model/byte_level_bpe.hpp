// Byte-level BPE (GGUF tokenizer.ggml.model = "gpt2"): each byte of a pre-tokenized word is one
// printable code point (GPT-2's bytes_to_unicode), and adjacent symbols merge lowest rank first,
// ranks being the order of tokenizer.ggml.merges, as Hugging Face's BPE model does.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/pretokenizer.hpp"
#include "model/vocab.hpp"

namespace parley {

class ByteLevelBpe {
 public:
  // Throws std::invalid_argument for an unknown pre type, no merges, or a merge line that is not
  // "left right" over tokens of the vocabulary (naming its rank).
  explicit ByteLevelBpe(const Vocab& vocab);

  // Appends the ids of text (special tokens already split off by the caller).
  void encode(std::string_view text, std::vector<int>& out) const;

  // The bytes a byte-level piece stands for ("Ġhi" -> " hi"); code points outside the byte map
  // (an added token's own text) are kept as they are.
  static std::string piece_bytes(std::string_view piece);
  // The byte-level spelling of raw bytes (" hi" -> "Ġhi"), as vocabularies store their pieces.
  static std::string byte_level_spelling(std::string_view bytes);

 private:
  void encode_word(const std::string& word, std::vector<int>& out) const;

  struct Merge {
    int rank;
    int merged_id;
  };
  static uint64_t pair_key(int left, int right) {
    return static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32 | static_cast<uint32_t>(right);
  }

  PreTokenizer pre_;
  std::unordered_map<std::string, int> piece_to_id_;  // byte-level spelling -> id (normal tokens)
  std::array<int, 256> byte_id_{};                    // the id of each byte's own symbol, -1 if none
  std::unordered_map<uint64_t, Merge> merges_;        // (left id, right id) -> rank and result
};

}  // namespace parley
