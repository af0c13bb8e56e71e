// Hugging Face tokenizer import: a tokenizer.json (+ tokenizer_config.json) as a GGUF vocabulary, in
// the layout llama.cpp's converter writes (tokens, token types, BOS/EOS ids, add_bos, chat template;
// merges and pre type for byte-level BPE). A SentencePiece-style BPE (byte_fallback, '▁' for space, as
// Gemma's) becomes a "llama" vocabulary whose scores follow the merge ranks; a WordPiece one (BERT's
// normalizer and pre-tokenizer) a "bert" vocabulary, as does an older BERT folder's vocab.txt (no tokenizer.json).
// Tests and benchmarks get real vocabularies this way.
#pragma once
#include <string>

#include "model/vocab.hpp"

namespace parley {

struct HfTokenizer {
  Vocab vocab;
  std::string chat_template;  // tokenizer_config.json's chat_template ("default" of a list), "" if none
};

// dir holds tokenizer.json (or BERT's vocab.txt) and tokenizer_config.json. pre: a tokenizer.ggml.pre name, or "" to
// recognise it from the tokenizer.json's pre-tokenizer patterns. Throws std::runtime_error naming
// the file and what it cannot import (another model type or normalizer, an unknown pre-tokenizer, ...).
HfTokenizer import_hf_tokenizer(const std::string& dir, const std::string& pre = "");

}  // namespace parley
