// A vocabulary in GGUF's tokenizer.ggml.* keys, read and written as llama.cpp does (llama-vocab.cpp reads them,
// convert_hf_to_gguf.py writes them): "llama" SentencePiece, "gpt2" byte-level BPE and "bert" WordPiece.
#pragma once
#include <optional>

#include "model/gguf.hpp"
#include "model/gguf_writer.hpp"
#include "model/vocab.hpp"

namespace parley {

// The file's vocabulary, nullopt when it has none ("none", "no_vocab" or no tokenizer.ggml.model). Fails through
// f.fail for an unsupported model, more tokens than model_vocab, or inconsistent keys.
std::optional<Vocab> read_gguf_vocab(const GgufFile& f, int model_vocab);

// The tokenizer.ggml.* keys of v. Throws std::invalid_argument for pieces, scores and types of different lengths.
void write_gguf_vocab(GgufWriter& g, const Vocab& v);

}  // namespace parley
