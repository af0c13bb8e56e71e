#include "model/model_file.hpp"

#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <unordered_set>

#include "model/gguf.hpp"
#include "model/llama2c.hpp"
#include "model/pretokenizer.hpp"

namespace parley {

void LlamaConfig::validate() const {
  auto positive = [](const char* field, long long v) {
    if (v <= 0)
      throw std::invalid_argument(std::string("LlamaConfig: ") + field + " must be positive (got " +
                                  std::to_string(v) + ")");
  };
  positive("dim", dim);
  positive("hidden_dim", hidden_dim);
  positive("n_layers", n_layers);
  positive("n_heads", n_heads);
  positive("n_kv_heads", n_kv_heads);
  positive("vocab_size", vocab_size);
  positive("max_seq_len", max_seq_len);
  if (dim % n_heads != 0)
    throw std::invalid_argument("LlamaConfig: dim (" + std::to_string(dim) + ") is not a multiple of n_heads (" +
                                std::to_string(n_heads) + ")");
  if (n_heads % n_kv_heads != 0)
    throw std::invalid_argument("LlamaConfig: n_heads (" + std::to_string(n_heads) +
                                ") is not a multiple of n_kv_heads (" + std::to_string(n_kv_heads) + ")");
  if (head_dim() % 2 != 0)
    throw std::invalid_argument("LlamaConfig: head_dim (dim / n_heads = " + std::to_string(head_dim()) +
                                ") must be even for RoPE");
  if (!(rope_theta > 0.0f) || !std::isfinite(rope_theta))
    throw std::invalid_argument("LlamaConfig: rope_theta must be positive and finite");
  if (!(norm_eps > 0.0f) || !std::isfinite(norm_eps))
    throw std::invalid_argument("LlamaConfig: norm_eps must be positive and finite");
}

namespace {

// One row per supported GGUF architecture: the rest of the loader is shared.
struct ArchSpec {
  std::string_view name;
  RopeLayout rope;
};
constexpr ArchSpec kArchs[] = {
    {"llama", RopeLayout::Adjacent},  // llama.cpp's NORM rope; converters store Q/K permuted for it
    {"qwen2", RopeLayout::NeoX},      // llama.cpp's NEOX rope; Q/K are stored as in HF
};

std::string shape_str(const std::vector<uint64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

int get_size(const GgufFile& f, const std::string& key) {
  int64_t v = f.get_int(key);
  if (v <= 0 || v > INT_MAX) f.fail("key '" + key + "' = " + std::to_string(v) + " is out of range");
  return static_cast<int>(v);
}

std::optional<Vocab> read_vocab(const GgufFile& f, int model_vocab) {
  if (!f.has("tokenizer.ggml.model")) return std::nullopt;
  const std::string& model = f.get_string("tokenizer.ggml.model");
  Vocab v;
  if (model == "llama") v.kind = TokenizerKind::SentencePiece;
  else if (model == "gpt2") v.kind = TokenizerKind::Gpt2Bpe;
  else if (model == "none" || model == "no_vocab") return std::nullopt;
  else f.fail("unsupported tokenizer model '" + model + "' (supported: llama, gpt2)");

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
    if (v.merges.empty()) f.fail("a gpt2 (byte-level BPE) vocabulary needs tokenizer.ggml.merges, which is missing or empty");
    v.pre = f.has("tokenizer.ggml.pre") ? f.get_string("tokenizer.ggml.pre") : "default";
    if (!find_pretokenizer(v.pre))
      f.fail("unknown pre-tokenizer type '" + v.pre + "' (tokenizer.ggml.pre; known: " + known_pretokenizers() + ")");
  }
  // The dummy-prefix space is a SentencePiece convention; byte-level BPE has no such default.
  v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", v.kind == TokenizerKind::SentencePiece);
  return v;
}

// The model's shape from the metadata, refusing keys that change the math Parley does not implement.
LlamaConfig config_from_gguf(const GgufFile& f) {
  const std::string& arch_name = f.get_string("general.architecture");
  const ArchSpec* arch = nullptr;
  for (const auto& a : kArchs)
    if (a.name == arch_name) arch = &a;
  if (!arch) f.fail("unsupported architecture '" + arch_name + "' (supported: llama, qwen2)");
  const std::string p = arch_name + ".";

  // Biases would silently change the output if ignored; refuse them before reading any weights.
  for (const auto& t : f.tensors())
    if (t.name.ends_with(".bias"))
      f.fail("tensor '" + t.name + "': biases (as in " + arch_name + " attention) are not supported yet");

  LlamaConfig c;
  c.dim = get_size(f, p + "embedding_length");
  c.hidden_dim = get_size(f, p + "feed_forward_length");
  c.n_layers = get_size(f, p + "block_count");
  // A multi-token-prediction block (llama.cpp's "nextn") follows the main layers and is counted with them.
  const int64_t nextn = f.get_int(p + "nextn_predict_layers", 0);
  if (nextn < 0 || nextn > 1 || nextn >= c.n_layers)
    f.fail("key '" + p + "nextn_predict_layers' is " + std::to_string(nextn) + " (Parley runs at most one MTP block)");
  c.n_layers -= int(nextn);
  c.n_heads = get_size(f, p + "attention.head_count");
  c.n_kv_heads = f.has(p + "attention.head_count_kv") ? get_size(f, p + "attention.head_count_kv") : c.n_heads;
  c.max_seq_len = get_size(f, p + "context_length");
  c.rope_theta = static_cast<float>(f.get_float(p + "rope.freq_base", 10000.0));
  c.norm_eps = static_cast<float>(f.get_float(p + "attention.layer_norm_rms_epsilon", 1e-5));
  c.rope_layout = arch->rope;
  if (f.has(p + "vocab_size")) c.vocab_size = get_size(f, p + "vocab_size");
  else if (const auto* t = f.find_tensor("token_embd.weight"); t && t->ne.size() == 2 && t->ne[1] <= INT_MAX)
    c.vocab_size = static_cast<int>(t->ne[1]);
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    f.fail(std::string("inconsistent model config: ") + e.what());
  }
  // Keys that change the math; ignoring them would give wrong logits, so refuse what is not implemented.
  if (f.has(p + "rope.scaling.type") && f.get_string(p + "rope.scaling.type") != "none")
    f.fail("RoPE scaling '" + f.get_string(p + "rope.scaling.type") + "' is not supported yet");
  if (f.get_int(p + "expert_count", 0) > 0) f.fail("mixture-of-experts models are not supported yet");
  for (const char* key : {"attention.key_length", "attention.value_length"})
    if (f.get_int(p + key, c.head_dim()) != c.head_dim())
      f.fail("key '" + p + key + "' differs from head_dim " + std::to_string(c.head_dim()) + " (not supported)");
  if (f.get_int(p + "rope.dimension_count", c.head_dim()) != c.head_dim())
    f.fail("key '" + p + "rope.dimension_count' differs from head_dim " + std::to_string(c.head_dim()) +
           " (partial RoPE is not supported)");

  return c;
}

ModelFile model_from_gguf(const GgufFile& f) {
  const std::string& arch_name = f.get_string("general.architecture");
  ModelFile m;
  m.name = f.has("general.name") ? f.get_string("general.name") : std::filesystem::path(f.path()).stem().string();
  m.config = config_from_gguf(f);
  LlamaConfig& c = m.config;
  const uint64_t dim = c.dim, hidden = c.hidden_dim, kv = c.kv_dim(), vocab = c.vocab_size;
  std::unordered_set<std::string> loaded;
  auto load = [&](const std::string& name, std::vector<uint64_t> ne) {
    const GgufTensorInfo& t = f.tensor(name);
    if (t.ne != ne)
      f.fail("shape mismatch for tensor '" + name + "': expected " + shape_str(ne) + ", found " + shape_str(t.ne));
    loaded.insert(name);
    return f.dequantize(t);
  };
  LlamaWeights& w = m.weights;
  w.token_embedding = load("token_embd.weight", {dim, vocab});
  auto load_layer = [&](int l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    LayerWeights L;
    L.attn_norm = load(b + "attn_norm.weight", {dim});
    L.wq = load(b + "attn_q.weight", {dim, dim});
    L.wk = load(b + "attn_k.weight", {dim, kv});
    L.wv = load(b + "attn_v.weight", {dim, kv});
    L.wo = load(b + "attn_output.weight", {dim, dim});
    L.ffn_norm = load(b + "ffn_norm.weight", {dim});
    L.w_gate = load(b + "ffn_gate.weight", {dim, hidden});
    L.w_down = load(b + "ffn_down.weight", {hidden, dim});
    L.w_up = load(b + "ffn_up.weight", {dim, hidden});
    return L;
  };
  // Grown layer by layer: a corrupt block_count fails on a missing tensor, not a huge allocation.
  for (int l = 0; l < c.n_layers; ++l) w.layers.push_back(load_layer(l));
  if (f.get_int(arch_name + ".nextn_predict_layers", 0) == 1) {
    const std::string b = "blk." + std::to_string(c.n_layers) + ".nextn.";
    MtpWeights& mtp = w.mtp.emplace();
    mtp.layer = load_layer(c.n_layers);
    mtp.enorm = load(b + "enorm.weight", {dim});
    mtp.hnorm = load(b + "hnorm.weight", {dim});
    mtp.eh_proj = load(b + "eh_proj.weight", {2 * dim, dim});
    mtp.shared_head_norm = load(b + "shared_head_norm.weight", {dim});
  }
  w.output_norm = load("output_norm.weight", {dim});
  c.tied_output = f.find_tensor("output.weight") == nullptr;
  if (!c.tied_output) w.output = load("output.weight", {dim, vocab});
  // An extra tensor means the model computes something Parley would silently skip.
  for (const auto& t : f.tensors())
    if (!loaded.contains(t.name))
      f.fail("unexpected tensor '" + t.name + "' (not part of the " + arch_name + " layout Parley runs)");
  m.vocab = read_vocab(f, c.vocab_size);
  if (f.has("tokenizer.chat_template")) m.chat_template = f.get_string("tokenizer.chat_template");
  return m;
}

}  // namespace

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
  if (is_gguf_file(path)) return model_from_gguf(GgufFile(path));
  return read_llama2c_checkpoint(path);
}

}  // namespace parley
