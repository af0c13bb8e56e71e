// Loading a model (GGUF or llama2.c checkpoint) into a config, F32 weights and optionally a vocab.
#pragma once
#include <optional>
#include <string>

#include "model/llama_weights.hpp"
#include "model/vocab.hpp"

namespace parley {

struct ModelFile {
  std::string name;  // general.name, or the file name
  LlamaConfig config;
  LlamaWeights weights;        // dequantized to F32
  std::optional<Vocab> vocab;  // present when the file carries a tokenizer (GGUF)
  std::string chat_template;   // GGUF tokenizer.chat_template (Jinja source), "" when absent
};

// Reads a GGUF (by magic) or a llama2.c checkpoint (otherwise). Throws std::runtime_error
// with a message that names the file and the problem.
ModelFile load_model_file(const std::string& path);

// Refuses (std::runtime_error naming the file and both sizes) weights of `need` bytes when `available` bytes of
// memory are left, rather than be killed by the OOM killer half way; available 0 means unknown (not checked).
void check_fits_memory(const std::string& path, uint64_t need, uint64_t available);
// /proc/meminfo's MemAvailable in bytes, or 0 when it cannot be read.
uint64_t available_memory();

// The model's shape alone (a GGUF's weights are not read). Throws as load_model_file does.
LlamaConfig load_model_config(const std::string& path);

// Whether the file starts with GGUF's magic (false for a file that cannot be read).
bool is_gguf_file(const std::string& path);
// The vocabulary a GGUF carries, without reading its weights; nullopt when it has none.
std::optional<Vocab> load_gguf_vocab(const std::string& path);

}  // namespace parley
