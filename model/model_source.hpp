// A model with its vocabulary, from a file (GGUF, or llama2.c plus tokenizer.bin) or built in.
#pragma once
#include <string>

#include "model/model_file.hpp"

namespace parley {

// An empty model_path gives the built-in random-weight model (builtin_model_config(), fixed seed).
// tokenizer_path: a llama2.c tokenizer.bin or a GGUF; empty uses the model file's own vocabulary.
// Throws std::runtime_error when no vocabulary is found or its size differs from the model's.
ModelFile load_model_with_vocab(const std::string& model_path, const std::string& tokenizer_path = "");

// Token ids that end generation: the vocabulary's end-of-generation set (EOS, EOT, EOM, <|im_end|>...),
// and for SentencePiece vocabularies BOS (a llama2.c model starts a new story with BOS; run.c stops there).
std::vector<int> default_stop_token_ids(const Vocab& vocab);

}  // namespace parley
