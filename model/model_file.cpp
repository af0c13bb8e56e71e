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
#include "model/llama2c.hpp"
#include "model/pretokenizer.hpp"

namespace parley {

namespace {

std::optional<Vocab> read_vocab(const GgufFile& f, int model_vocab) {
  if (!f.has("tokenizer.ggml.model")) return std::nullopt;
  const std::string& model = f.get_string("tokenizer.ggml.model");
  Vocab v;
  if (model == "llama")
    v.kind = TokenizerKind::SentencePiece;
  else if (model == "gpt2")
    v.kind = TokenizerKind::Gpt2Bpe;
  else if (model == "none" || model == "no_vocab")
    return std::nullopt;
  else
    f.fail("unsupported tokenizer model '" + model + "' (supported: llama, gpt2)");

  v.pieces = f.get_string_array("tokenizer.ggml.tokens");
  const size_t n = v.pieces.size();
  if (n == 0 || n > static_cast<size_t>(model_vocab))
    f.fail("tokenizer.ggml.tokens has " + std::to_string(n) + " tokens for a model vocab of " +
           std::to_string(model_vocab));
  if (v.kind == TokenizerKind::SentencePiece) {
    static constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space
    for (auto& p : v.pieces)
      for (size_t at = p.find(kSpace); at != std::string::npos; at = p.find(kSpace, at + 1))
        p.replace(at, kSpace.size(), " ");
  }
  v.scores = f.has("tokenizer.ggml.scores") ? f.get_float_array("tokenizer.ggml.scores") : std::vector<float>(n);
  if (v.scores.size() != n) f.fail("tokenizer.ggml.scores and tokenizer.ggml.tokens differ in length");
  v.types.assign(n, TokenType::Normal);
  if (f.has("tokenizer.ggml.token_type")) {
    auto types = f.get_int_array("tokenizer.ggml.token_type");
    if (types.size() != n) f.fail("tokenizer.ggml.token_type and tokenizer.ggml.tokens differ in length");
    for (size_t i = 0; i < n; ++i) {
      if (types[i] < 0 || types[i] > 6)
        f.fail("tokenizer.ggml.token_type[" + std::to_string(i) + "] = " + std::to_string(types[i]) + " is unknown");
      v.types[i] = static_cast<TokenType>(types[i]);
    }
  }
  const bool spm = v.kind == TokenizerKind::SentencePiece;
  auto id = [&](const char* key, int32_t fallback) {
    if (!f.has(key)) return fallback;
    int64_t x = f.get_int(key);
    if (x < 0 || x >= static_cast<int64_t>(n))
      f.fail(std::string("key '") + key + "' = " + std::to_string(x) + " is not a token id");
    return static_cast<int32_t>(x);
  };
  // SentencePiece files without the keys mean llama2's <unk>, <s>, </s>; a byte-level one has none.
  v.bos_id = id("tokenizer.ggml.bos_token_id", spm ? v.bos_id : -1);
  v.eos_id = id("tokenizer.ggml.eos_token_id", spm ? v.eos_id : -1);
  v.unk_id = id("tokenizer.ggml.unknown_token_id", spm ? v.unk_id : -1);
  v.eot_id = id("tokenizer.ggml.eot_token_id", -1);
  v.eom_id = id("tokenizer.ggml.eom_token_id", -1);
  v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", spm);
  v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token", false);
  if (v.add_bos && v.bos_id < 0) f.fail("tokenizer.ggml.add_bos_token is set but the vocabulary has no BOS token");
  if (!spm) {
    if (f.has("tokenizer.ggml.merges")) v.merges = f.get_string_array("tokenizer.ggml.merges");
    if (v.merges.empty())
      f.fail("a gpt2 (byte-level BPE) vocabulary needs tokenizer.ggml.merges, which is missing or empty");
    v.pre = f.has("tokenizer.ggml.pre") ? f.get_string("tokenizer.ggml.pre") : "default";
    if (!find_pretokenizer(v.pre))
      f.fail("unknown pre-tokenizer type '" + v.pre + "' (tokenizer.ggml.pre; known: " + known_pretokenizers() + ")");
  }
  // The dummy-prefix space is a SentencePiece convention; byte-level BPE has no such default.
  v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", v.kind == TokenizerKind::SentencePiece);
  return v;
}

// The config, the weights in llama.cpp's tensor layout (model/gguf_layout.cpp), the vocabulary and the template.
ModelFile model_from_gguf(const GgufFile& f) {
  ModelFile m;
  m.name = f.has("general.name") ? f.get_string("general.name") : std::filesystem::path(f.path()).stem().string();
  m.config = config_from_gguf(f);
  m.weights = read_gguf_weights(f, m.config);
  m.vocab = read_vocab(f, m.config.vocab_size);
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

std::optional<Vocab> load_gguf_vocab(const std::string& path) { return read_vocab(GgufFile(path), INT_MAX); }

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
