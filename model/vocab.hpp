// A tokenizer vocabulary as read from llama2.c tokenizer.bin or GGUF tokenizer.ggml.*.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace parley {

// GGUF tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6,
};

enum class TokenizerKind {
  SentencePiece,  // GGUF tokenizer.ggml.model = "llama": score-ordered merges with byte fallback
  Gpt2Bpe,        // GGUF "gpt2": byte-level BPE (not implemented yet; rejected with a clear error)
};

struct Vocab {
  TokenizerKind kind = TokenizerKind::SentencePiece;
  // Piece text with real spaces (GGUF's U+2581 is mapped to ' ' on load and back on write).
  // Byte tokens keep their "<0xAB>" spelling; control tokens their "<s>" / "</s>" names.
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<TokenType> types;
  int32_t bos_id = 1;
  int32_t eos_id = 2;
  int32_t unk_id = 0;
  bool add_bos = true;
  bool add_space_prefix = true;  // SentencePiece's dummy prefix ' ' before non-empty text

  int size() const { return static_cast<int>(pieces.size()); }
};

}  // namespace parley
