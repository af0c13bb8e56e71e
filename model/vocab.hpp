// A tokenizer vocabulary as read from llama2.c tokenizer.bin or GGUF tokenizer.ggml.*.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace parley {

// GGUF tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

enum class TokenizerKind {
  SentencePiece,  // GGUF tokenizer.ggml.model = "llama": score-ordered merges with byte fallback
  Gpt2Bpe,        // GGUF "gpt2": byte-level BPE with a pre-tokenizer and ranked merges
  WordPiece,      // GGUF "bert": BERT's normalizer and pre-tokenizer, then greedy longest-match pieces
};

struct Vocab {
  TokenizerKind kind = TokenizerKind::SentencePiece;
  // SentencePiece: piece text with real spaces (GGUF's U+2581 is mapped to ' ' on load and back on
  // write); byte tokens keep their "<0xAB>" spelling. Byte-level BPE: pieces as the file spells them
  // (GPT-2's byte-to-unicode mapping, "Ġhi"). WordPiece: as llama.cpp's converter writes them, a word's
  // first piece with a U+2581 prefix ("▁play"), a continuation bare ("ing" for BERT's "##ing"). Control and
  // user-defined tokens: their own text.
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<TokenType> types;
  int32_t bos_id = 1;
  int32_t eos_id = 2;
  int32_t unk_id = 0;
  int32_t eot_id = -1;  // end of turn (tokenizer.ggml.eot_token_id), -1 when none
  int32_t eom_id = -1;  // end of message (tokenizer.ggml.eom_token_id), -1 when none
  int32_t sep_id = -1;  // separator (tokenizer.ggml.seperator_token_id): BERT's [SEP], -1 when none
  bool add_bos = true;
  bool add_eos = false;
  bool add_sep = false;          // WordPiece: [SEP] closes the text with add_special (tokenizer.ggml.add_sep_token)
  bool add_space_prefix = true;  // SentencePiece's dummy prefix ' ' before non-empty text
  // Byte-level BPE only: "left right" pairs, highest priority first, and the pre-tokenizer type.
  std::vector<std::string> merges;
  std::string pre = "default";
  // WordPiece only: BERT's normalizer (tokenizer.ggml.normalizer.*); uncased vocabularies lowercase and strip accents.
  bool lowercase = true;
  bool strip_accents = true;

  int size() const { return static_cast<int>(pieces.size()); }
};

}  // namespace parley
