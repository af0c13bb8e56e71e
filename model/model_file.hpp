// Loading a model (GGUF or llama2.c checkpoint) into a config, F32 weights and optionally a vocab.
#pragma once
#include <optional>
#include <string>

#include "model/llama_config.hpp"
#include "model/vocab.hpp"

namespace parley {

struct ModelFile {
  std::string name;            // general.name, or the file name
  LlamaConfig config;
  LlamaWeights weights;        // dequantized to F32
  std::optional<Vocab> vocab;  // present when the file carries a tokenizer (GGUF)
};

// Reads a GGUF (by magic) or a llama2.c checkpoint (otherwise). Throws std::runtime_error
// with a message that names the file and the problem.
ModelFile load_model_file(const std::string& path);

}  // namespace parley
