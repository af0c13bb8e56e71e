// SentencePiece-style BPE with byte fallback, as llama2.c's run.c encodes and decodes.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/vocab.hpp"

namespace parley {

// Reads llama2.c's tokenizer.bin (max_token_length, then per token: float score, int32 length,
// bytes). Control pieces are renamed "<unk>", "<s>", "</s>"; byte pieces get TokenType::Byte.
// Throws std::runtime_error naming the file and the problem.
Vocab read_llama2c_tokenizer(const std::string& path, int vocab_size);

class Tokenizer {
 public:
  // Throws std::invalid_argument for a vocab it cannot run (e.g. Gpt2Bpe: not implemented yet).
  explicit Tokenizer(Vocab vocab);

  // llama2.c encode(): optional BOS, dummy-prefix ' ' for non-empty text, per-UTF-8-char lookup
  // with byte fallback, then repeatedly merge the adjacent pair with the highest score
  // (first such pair on ties).
  std::vector<int> encode(std::string_view text, bool add_bos) const;

  // Bytes of one token; after BOS a leading space is dropped (run.c's decode()).
  std::string token_bytes(int prev_token, int token) const;
  // Whole-sequence decode (concatenated token_bytes); may contain invalid UTF-8 if the ids do.
  std::string decode(const std::vector<int>& tokens, int prev_token = -1) const;

  const Vocab& vocab() const { return vocab_; }
  int bos_id() const { return vocab_.bos_id; }
  int eos_id() const { return vocab_.eos_id; }

 private:
  // The SentencePiece strategy (text without BOS); a gpt2 byte-level BPE would be a sibling.
  std::vector<int> encode_spm(std::string_view text) const;
  // Id of a text-matchable piece (Normal/UserDefined/Undefined), -1 if none.
  int lookup(std::string_view piece) const;

  Vocab vocab_;
  std::unordered_map<std::string, int> piece_to_id_;  // first id for each text-matchable piece
  std::vector<std::string> bytes_;                    // decoded bytes per token
  std::array<int, 256> byte_to_id_{};                 // id of the "<0xAB>" Byte token, or -1
};

}  // namespace parley
