#include "model/model_file.hpp"

#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include "model/architecture.hpp"
#include "model/gguf.hpp"
#include "model/gguf_layout.hpp"
#include "model/gguf_vocab.hpp"
#include "model/llama2c.hpp"

namespace parley {

namespace {

// The config, the weights in llama.cpp's tensor layout (model/gguf_layout.cpp), the vocabulary and the template.
ModelFile model_from_gguf(const GgufFile& f) {
  ModelFile m;
  m.name = f.has("general.name") ? f.get_string("general.name") : std::filesystem::path(f.path()).stem().string();
  m.config = config_from_gguf(f);
  m.weights = read_gguf_weights(f, m.config);
  m.vocab = read_gguf_vocab(f, m.config.vocab_size);
  if (f.has("tokenizer.chat_template")) m.chat_template = f.get_string("tokenizer.chat_template");
  return m;
}

}  // namespace

void check_fits_memory(const std::string& path, uint64_t need, uint64_t available) {
  if (available == 0 || need <= available) return;
  auto gib = [](uint64_t b) {
    char s[32];
    std::snprintf(s, sizeof(s), "%.2f GiB", double(b) / double(1ull << 30));
    return std::string(s);
  };
  throw std::runtime_error("model file '" + path + "': its weights need " + gib(need) + " of memory and " +
                           gib(available) + " is available (MemAvailable): free memory or pick a smaller quantization");
}

uint64_t available_memory() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

bool is_gguf_file(const std::string& path) {
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(magic, 4);
  return in && std::string_view(magic, 4) == "GGUF";
}

std::optional<Vocab> load_gguf_vocab(const std::string& path) { return read_gguf_vocab(GgufFile(path), INT_MAX); }

LlamaConfig load_model_config(const std::string& path) {
  if (!std::ifstream(path, std::ios::binary)) throw std::runtime_error("cannot open model file '" + path + "'");
  if (is_gguf_file(path)) return config_from_gguf(GgufFile(path));
  return read_llama2c_checkpoint(path).config;  // llama2.c checkpoints are small
}

ModelFile load_model_file(const std::string& path) {
  if (!std::ifstream(path, std::ios::binary)) throw std::runtime_error("cannot open model file '" + path + "'");
  if (is_gguf_file(path)) {
    const GgufFile f(path);
    uint64_t need = 0;  // the weights are copied out of the mapping; their packing holds one matrix more at a time
    for (const auto& t : f.tensors()) need += t.nbytes;
    check_fits_memory(path, need, available_memory());
    return model_from_gguf(f);
  }
  return read_llama2c_checkpoint(path);
}

}  // namespace parley
