#include "model/model_file.hpp"

#include <climits>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <unordered_set>

#include "model/architecture.hpp"
#include "model/gguf.hpp"
#include "model/llama2c.hpp"
#include "model/pretokenizer.hpp"

namespace parley {

namespace {

std::string shape_str(const std::vector<uint64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

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

// Splits the rows of a fused [a + b + c][in] matrix back into its parts (the forward pass fuses them again).
void split_rows(const WeightMatrix& fused, int64_t in, std::initializer_list<std::pair<WeightMatrix*, int64_t>> parts) {
  int64_t at = 0;
  for (auto [out, rows] : parts) {
    *out = fused.row_slice(at, rows, in);
    at += rows;
  }
}

// The tensors of llama.cpp's layout for the config's architecture, each checked for its shape; a tensor
// the layout does not name is refused, as ignoring it would silently change the output.
ModelFile model_from_gguf(const GgufFile& f) {
  ModelFile m;
  m.name = f.has("general.name") ? f.get_string("general.name") : std::filesystem::path(f.path()).stem().string();
  m.config = config_from_gguf(f);
  LlamaConfig& c = m.config;
  const ArchSpec& arch = *find_arch(c.arch);
  const uint64_t dim = c.dim, hidden = c.hidden_dim, qd = c.q_dim(), kv = c.kv_dim(), vocab = c.vocab_size,
                 hd = c.head_dim();
  std::unordered_set<std::string> loaded;
  auto checked = [&](const std::string& name, const std::vector<uint64_t>& ne) -> const GgufTensorInfo& {
    const GgufTensorInfo& t = f.tensor(name);
    if (t.ne != ne)
      f.fail("shape mismatch for tensor '" + name + "': expected " + shape_str(ne) + ", found " + shape_str(t.ne));
    loaded.insert(name);
    return t;
  };
  auto load = [&](const std::string& name, std::vector<uint64_t> ne) { return f.dequantize(checked(name, ne)); };
  // Matrices stay in the file's type: [ne[1]][ne[0]] rows of blocks.
  auto load_matrix = [&](const std::string& name, std::vector<uint64_t> ne) {
    const GgufTensorInfo& t = checked(name, ne);
    return WeightMatrix::from_blocks(t.type, int64_t(ne[1]), int64_t(ne[0]),
                                     std::vector<uint8_t>(t.data, t.data + t.nbytes));
  };
  // A 3-D tensor [n_experts][rows][cols] as one matrix per expert, copied out of the file one expert at a time.
  auto load_experts = [&](const std::string& name, std::vector<uint64_t> ne) {
    const GgufTensorInfo& t = checked(name, ne);
    const size_t bytes = quant::row_bytes(t.type, int64_t(ne[0])) * size_t(ne[1]);
    std::vector<WeightMatrix> out;
    for (uint64_t e = 0; e < ne[2]; ++e) {
      const uint8_t* at = t.data + e * bytes;
      out.push_back(
          WeightMatrix::from_blocks(t.type, int64_t(ne[1]), int64_t(ne[0]), std::vector<uint8_t>(at, at + bytes)));
    }
    return out;
  };
  auto load_moe = [&](const std::string& b) {
    const uint64_t E = uint64_t(c.moe.n_experts), H = uint64_t(c.moe.expert_hidden), S = uint64_t(c.moe.shared_hidden);
    ExpertWeights x;
    x.router = load_matrix(b + "ffn_gate_inp.weight", {dim, E});
    if (f.find_tensor(b + "ffn_gate_up_exps.weight")) {  // gate and up fused: each expert's gate rows, then its up rows
      for (WeightMatrix& gu : load_experts(b + "ffn_gate_up_exps.weight", {dim, 2 * H, E})) {
        x.gate.push_back(gu.row_slice(0, int64_t(H), int64_t(dim)));
        x.up.push_back(gu.row_slice(int64_t(H), int64_t(H), int64_t(dim)));
      }
    } else {
      x.gate = load_experts(b + "ffn_gate_exps.weight", {dim, H, E});
      x.up = load_experts(b + "ffn_up_exps.weight", {dim, H, E});
    }
    x.down = load_experts(b + "ffn_down_exps.weight", {H, dim, E});
    if (c.moe.expert_biases) {
      x.router_bias = load(b + "ffn_gate_inp.bias", {E});
      x.gate_bias = load(b + "ffn_gate_exps.bias", {H, E});
      x.up_bias = load(b + "ffn_up_exps.bias", {H, E});
      x.down_bias = load(b + "ffn_down_exps.bias", {dim, E});
    }
    if (S > 0) {
      x.shared_gate = load(b + "ffn_gate_inp_shexp.weight", {dim});
      x.shared_w_gate = load_matrix(b + "ffn_gate_shexp.weight", {dim, S});
      x.shared_w_up = load_matrix(b + "ffn_up_shexp.weight", {dim, S});
      x.shared_w_down = load_matrix(b + "ffn_down_shexp.weight", {S, dim});
    }
    return x;
  };
  LlamaWeights& w = m.weights;
  w.token_embedding = load_matrix("token_embd.weight", {dim, vocab});
  auto load_layer = [&](int l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    LayerWeights L;
    L.attn_norm = load(b + "attn_norm.weight", {dim});
    if (f.find_tensor(b + "attn_qkv.weight")) {  // Phi-3 stores Q, K and V as one matrix
      split_rows(load_matrix(b + "attn_qkv.weight", {dim, qd + 2 * kv}), int64_t(dim),
                 {{&L.wq, qd}, {&L.wk, kv}, {&L.wv, kv}});
      if (c.qkv_bias) {
        const std::vector<float> bias = load(b + "attn_qkv.bias", {qd + 2 * kv});
        L.bq.assign(bias.begin(), bias.begin() + std::ptrdiff_t(qd));
        L.bk.assign(bias.begin() + std::ptrdiff_t(qd), bias.begin() + std::ptrdiff_t(qd + kv));
        L.bv.assign(bias.begin() + std::ptrdiff_t(qd + kv), bias.end());
      }
    } else {
      L.wq = load_matrix(b + "attn_q.weight", {dim, qd});
      L.wk = load_matrix(b + "attn_k.weight", {dim, kv});
      L.wv = load_matrix(b + "attn_v.weight", {dim, kv});
      if (c.qkv_bias) {
        L.bq = load(b + "attn_q.bias", {qd});
        L.bk = load(b + "attn_k.bias", {kv});
        L.bv = load(b + "attn_v.bias", {kv});
      }
    }
    if (c.qk_norm) {
      L.q_norm = load(b + "attn_q_norm.weight", {hd});
      L.k_norm = load(b + "attn_k_norm.weight", {hd});
    }
    L.wo = load_matrix(b + "attn_output.weight", {qd, dim});
    if (c.attn_out_bias) L.bo = load(b + "attn_output.bias", {dim});
    if (c.attn_sinks) L.attn_sinks = load(b + "attn_sinks.weight", {uint64_t(c.n_heads)});
    L.ffn_norm = load(b + std::string(arch.ffn_norm) + ".weight", {dim});
    if (c.moe.enabled()) {
      L.experts = load_moe(b);
    } else if (f.find_tensor(b + "ffn_gate.weight")) {
      L.w_gate = load_matrix(b + "ffn_gate.weight", {dim, hidden});
      L.w_up = load_matrix(b + "ffn_up.weight", {dim, hidden});
    } else {  // Phi-3: one up matrix whose first half is the gate
      split_rows(load_matrix(b + "ffn_up.weight", {dim, 2 * hidden}), int64_t(dim),
                 {{&L.w_gate, hidden}, {&L.w_up, hidden}});
    }
    if (!c.moe.enabled()) L.w_down = load_matrix(b + "ffn_down.weight", {hidden, dim});
    if (c.post_norms) {
      L.post_attn_norm = load(b + "post_attention_norm.weight", {dim});
      L.post_ffn_norm = load(b + "post_ffw_norm.weight", {dim});
    }
    return L;
  };
  // Grown layer by layer: a corrupt block_count fails on a missing tensor, not a huge allocation.
  for (int l = 0; l < c.n_layers; ++l) w.layers.push_back(load_layer(l));
  if (f.get_int(c.arch + ".nextn_predict_layers", 0) == 1) {
    const std::string b = "blk." + std::to_string(c.n_layers) + ".nextn.";
    MtpWeights& mtp = w.mtp.emplace();
    mtp.layer = load_layer(c.n_layers);
    mtp.enorm = load(b + "enorm.weight", {dim});
    mtp.hnorm = load(b + "hnorm.weight", {dim});
    mtp.eh_proj = load_matrix(b + "eh_proj.weight", {2 * dim, dim});
    mtp.shared_head_norm = load(b + "shared_head_norm.weight", {dim});
  }
  const uint64_t half_rot = uint64_t(c.rotary_dims()) / 2;
  if (f.find_tensor("rope_freqs.weight")) {
    w.rope_freq_factors = load("rope_freqs.weight", {half_rot});
  } else if (find_arch(c.arch)->longrope_factors && f.find_tensor("rope_factors_long.weight")) {
    // As llama.cpp: the long factors serve a context beyond the original one, the short ones otherwise.
    auto long_factors = load("rope_factors_long.weight", {half_rot});
    auto short_factors = load("rope_factors_short.weight", {half_rot});
    w.rope_freq_factors = c.max_seq_len > c.rope_original_context ? long_factors : short_factors;
  }
  for (float x : w.rope_freq_factors)
    if (!(x > 0.0f) || !std::isfinite(x)) f.fail("RoPE frequency factors must be positive and finite");
  w.output_norm = load("output_norm.weight", {dim});
  c.tied_output = f.find_tensor("output.weight") == nullptr;
  if (!c.tied_output) w.output = load_matrix("output.weight", {dim, vocab});
  for (const auto& t : f.tensors())
    if (!loaded.contains(t.name))
      f.fail("unexpected tensor '" + t.name + "' (not part of the " + c.arch + " layout Parley runs)");
  m.vocab = read_vocab(f, c.vocab_size);
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
