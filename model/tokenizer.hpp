// A vocabulary's tokenizer: special tokens cut out first, then SentencePiece-style BPE with byte
// fallback (llama2.c's run.c), byte-level BPE (GGUF "gpt2") or WordPiece (GGUF "bert") on the text between them.
#pragma once
#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/byte_level_bpe.hpp"
#include "model/special_tokens.hpp"
#include "model/vocab.hpp"
#include "model/wordpiece.hpp"

namespace parley {

// Reads llama2.c's tokenizer.bin (max_token_length, then per token: float score, int32 length,
// bytes). Control pieces are renamed "<unk>", "<s>", "</s>"; byte pieces get TokenType::Byte.
// Throws std::runtime_error naming the file and the problem.
Vocab read_llama2c_tokenizer(const std::string& path, int vocab_size);

class Tokenizer {
 public:
  // Throws std::invalid_argument for a vocab it cannot run (an unknown pre type, broken merges).
  explicit Tokenizer(Vocab vocab);

  // Control and user-defined tokens spelled in text become those tokens (leftmost-longest); the
  // text between them is encoded by the vocabulary's kind. With add_special, BOS and EOS (WordPiece: [CLS]
  // and [SEP]) are added where the vocabulary says (add_bos, add_eos, add_sep).
  // SentencePiece (llama2.c encode()): a dummy-prefix ' ' before each text run that starts the text
  // or follows a special token (llama.cpp), per-UTF-8-char lookup with byte fallback, then
  // repeatedly merge the adjacent pair with the highest score (first such pair on ties).
  std::vector<int> encode(std::string_view text, bool add_special) const;

  // Bytes of one token; SentencePiece drops a leading space after BOS (run.c's decode()). Control tokens
  // decode to nothing unless special_text, then to their own text. A WordPiece token decodes as llama.cpp's
  // token_to_piece: a word's first piece with a space before it (" play", "ing").
  std::string token_bytes(int prev_token, int token, bool special_text = false) const;
  // Whole-sequence decode (concatenated token_bytes); may contain invalid UTF-8 if the ids do.
  std::string decode(const std::vector<int>& tokens, int prev_token = -1, bool special_text = false) const;

  const Vocab& vocab() const { return vocab_; }
  int bos_id() const { return vocab_.bos_id; }
  int eos_id() const { return vocab_.eos_id; }
  // Whether token ends generation (EOS, EOT, EOM and their kin, see end_of_generation_ids).
  bool is_end_of_generation(int token) const;
  const std::vector<int>& end_of_generation() const { return eog_ids_; }

 private:
  // The SentencePiece strategy on one text run.
  std::vector<int> encode_spm(std::string_view text, bool space_prefix) const;
  // Its two halves: the text split into symbols, then the merges.
  struct SpmSymbol;
  std::vector<SpmSymbol> spm_symbols(std::string_view text, bool space_prefix) const;
  void merge_spm(std::vector<SpmSymbol>& syms) const;
  // Id of a text-matchable piece (Normal/UserDefined/Undefined), -1 if none.
  int lookup(std::string_view piece) const;

  Vocab vocab_;
  std::unordered_map<std::string, int> piece_to_id_;  // first id for each text-matchable piece
  std::vector<std::string> bytes_;                    // decoded bytes per token
  std::array<int, 256> byte_to_id_{};                 // id of the "<0xAB>" Byte token, or -1
  SpecialTokenMatcher specials_;
  std::unique_ptr<const ByteLevelBpe> bpe_;     // set for byte-level BPE vocabularies
  std::unique_ptr<const WordPiece> wordpiece_;  // set for WordPiece vocabularies
  std::vector<int> eog_ids_;
};

}  // namespace parley
