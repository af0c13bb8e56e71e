#include "model/random_model.hpp"

#include "model/gguf_writer.hpp"
#include "kernels/quant/ggml_types.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <unordered_set>

namespace parley {

LlamaConfig builtin_model_config() {
  LlamaConfig c;
  c.dim = 64;
  c.hidden_dim = 192;
  c.n_layers = 4;
  c.n_heads = 8;
  c.n_kv_heads = 4;
  c.vocab_size = 512;
  c.max_seq_len = 1024;
  c.rope_layout = RopeLayout::Adjacent;
  c.tied_output = true;
  return c;
}

LlamaConfig bench_110m_config() {
  LlamaConfig c;
  c.dim = 768;
  c.hidden_dim = 2048;
  c.n_layers = 12;
  c.n_heads = 12;
  c.n_kv_heads = 12;
  c.vocab_size = 32000;
  c.max_seq_len = 2048;
  c.rope_layout = RopeLayout::Adjacent;
  c.tied_output = true;  // as llama2.c stories110M: 110M parameters with the head tied
  return c;
}

namespace {

// splitmix64 (Steele, Lea, Flood 2014): tiny, fully specified, good enough for weights.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1): 24 random bits are exact in a float, so no rounding differs by platform.
  float symmetric() { return static_cast<float>(next() >> 40) * (2.0f / 16777216.0f) - 1.0f; }
};

// 64-bit FNV-1a: a tensor's name picks its own stream, so tensors can be drawn in any order.
uint64_t fnv1a(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char ch : text) h = (h ^ uint8_t(ch)) * 0x100000001b3ull;
  return h;
}

std::vector<float> uniform(SplitMix64& rng, size_t rows, size_t in_features) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(in_features));
  std::vector<float> w(rows * in_features);
  for (float& x : w) x = rng.symmetric() * scale;
  return w;
}

// Common English pieces for TinyStories-like text; prefixes are added automatically.
constexpr std::string_view kCommon[] = {
    " the",  " and",   " a",      " to",     " was",  " he",   " she",  " it",    " of",     " in",   " they", " her",
    " his",  " said",  " with",   " you",    " on",   " for",  " that", " day",   " big",    " time", " upon", " Once",
    " One",  " there", " named",  " little", " girl", " boy",  " play", " happy", " friend", " mom",  " dog",  " cat",
    " saw",  " went",  " wanted", " very",   " had",  " not",  " is",   " so",    " but",    " were", " be",   " all",
    " Lily", " Tom",   " Ben",    " Tim",    " Sue",  " park", " tree", " ball",  " toy",    " sun",  " fun",  " can",
    "ing",   "ed",     "er",      "ly",      "th",    "he",    "in",    "an",     "re",      "on",    "at",    "en",
    "nd",    "st",     "es",      "ou",      ".",     ",",     "!",     "?",      "\"",      "'s",    " \"",
};

// An encoder's LayerNorms, FFN biases, token type row and positions (and a cross-encoder's dense head layer).
template <class Rng>
void add_random_encoder_parts(const LlamaConfig& cfg, Rng& rng, LlamaWeights& w) {
  const size_t dim = size_t(cfg.dim);
  auto values = [&](size_t n, float center, float spread) {
    std::vector<float> v(n);
    for (float& x : v) x = center + spread * rng.symmetric();
    return v;
  };
  auto layer_norm = [&] { return LayerNormWeights{values(dim, 1.0f, 0.5f), values(dim, 0.0f, 0.5f)}; };
  for (LayerWeights& L : w.layers) {
    if (cfg.activation == FfnActivation::Gelu) L.w_gate = {};  // drawn with the others, but BERT has no gate
    L.attn_out_norm = layer_norm();
    L.layer_out_norm = layer_norm();
    if (cfg.ffn_bias) L.b_up = values(size_t(cfg.hidden_dim), 0.0f, 0.5f), L.b_down = values(dim, 0.0f, 0.5f);
  }
  w.output_norm.clear();
  w.token_type = values(dim, 0.0f, 0.5f);
  if (cfg.learned_positions) w.position_embedding = uniform(rng, size_t(cfg.max_seq_len), dim);
  w.embedding_norm = layer_norm();
  if (cfg.pooling == PoolingType::Rank) {
    w.cls = uniform(rng, dim, dim);
    w.cls_bias = values(dim, 0.0f, 0.5f);
    w.cls_out_bias = values(std::max<size_t>(1, cfg.classifier_labels.size()), 0.0f, 0.5f);
  }
}

}  // namespace

Vocab make_synthetic_vocab(int vocab_size) {
  constexpr int kSpecial = 3 + 256, kMin = kSpecial + 95;
  if (vocab_size < kMin)
    throw std::invalid_argument("make_synthetic_vocab: vocab_size " + std::to_string(vocab_size) +
                                " is below the minimum " + std::to_string(kMin) + " (specials, bytes, ASCII)");
  Vocab v;
  v.kind = TokenizerKind::SentencePiece;
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  auto push = [&](std::string piece, float score, TokenType type) {
    v.pieces.push_back(std::move(piece));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  push("<unk>", 0.0f, TokenType::Unknown);
  push("<s>", 0.0f, TokenType::Control);
  push("</s>", 0.0f, TokenType::Control);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    push(buf, 0.0f, TokenType::Byte);
  }

  std::unordered_set<std::string> seen;
  // Adds a piece after its one-shorter prefix, so a left-to-right merge path always exists.
  auto add = [&](auto& self, const std::string& piece) -> void {
    if (v.size() >= vocab_size || seen.contains(piece)) return;
    if (piece.size() > 1) self(self, piece.substr(0, piece.size() - 1));
    if (v.size() >= vocab_size) return;
    seen.insert(piece);
    push(piece, -static_cast<float>(v.size() - kSpecial), TokenType::Normal);  // earlier = merged first
  };
  for (char ch = ' '; ch <= '~'; ++ch) add(add, std::string(1, ch));
  for (char ch = 'a'; ch <= 'z'; ++ch) add(add, std::string(" ") + ch);
  for (char ch = 'A'; ch <= 'Z'; ++ch) add(add, std::string(" ") + ch);
  for (std::string_view p : kCommon) add(add, std::string(p));
  // Letters by rough English frequency, so the generated pieces look plausible early on.
  static constexpr std::string_view kLetters = "etaoinshrdlcumwfgypbvkjxqz";
  for (std::string_view prefix : {"", " "}) {
    for (char a : kLetters)
      for (char b : kLetters) add(add, std::string(prefix) + a + b);
  }
  for (std::string_view prefix : {"", " "}) {
    for (char a : kLetters)
      for (char b : kLetters)
        for (char c : kLetters) add(add, std::string(prefix) + a + b + c);
  }
  // Real shapes have larger vocabularies: the rest are unused placeholders, as converters pad id gaps.
  for (int i = 0; v.size() < vocab_size; ++i) push("[PAD" + std::to_string(i) + "]", -1e9f, TokenType::Unused);
  return v;
}

ModelFile make_random_model(const LlamaConfig& cfg, uint64_t seed, bool with_mtp, std::optional<Vocab> given_vocab,
                            bool with_rope_factors) {
  cfg.validate();
  if (given_vocab && given_vocab->size() != cfg.vocab_size)
    throw std::invalid_argument("make_random_model: the vocabulary has " + std::to_string(given_vocab->size()) +
                                " tokens, the config " + std::to_string(cfg.vocab_size));
  ModelFile m;
  m.name = "random-" + std::to_string(seed);
  m.config = cfg;
  m.vocab = given_vocab ? std::move(*given_vocab) : make_synthetic_vocab(cfg.vocab_size);

  SplitMix64 rng{seed};
  const size_t dim = cfg.dim, hidden = cfg.hidden_dim, qd = cfg.q_dim(), kv = cfg.kv_dim(), vocab = cfg.vocab_size;
  LlamaWeights& w = m.weights;
  // A fixed fill order: changing it changes every model, so append new tensors at the end.
  w.token_embedding = uniform(rng, vocab, dim);
  auto random_layer = [&] {
    LayerWeights L;
    L.attn_norm.assign(dim, 1.0f);
    L.wq = uniform(rng, qd, dim);
    L.wk = uniform(rng, kv, dim);
    L.wv = uniform(rng, kv, dim);
    L.wo = uniform(rng, dim, qd);
    L.ffn_norm.assign(dim, 1.0f);
    if (cfg.moe.enabled()) return L;  // experts are drawn after every other tensor
    L.w_gate = uniform(rng, hidden, dim);
    L.w_down = uniform(rng, dim, hidden);
    L.w_up = uniform(rng, hidden, dim);
    return L;
  };
  for (int l = 0; l < cfg.n_layers; ++l) w.layers.push_back(random_layer());
  w.output_norm.assign(dim, 1.0f);
  if (!cfg.tied_output) w.output = uniform(rng, vocab, dim);
  if (with_mtp) {
    MtpWeights& mtp = w.mtp.emplace();
    mtp.layer = random_layer();
    mtp.enorm.assign(dim, 1.0f);
    mtp.hnorm.assign(dim, 1.0f);
    mtp.eh_proj = uniform(rng, dim, 2 * dim);
    mtp.shared_head_norm.assign(dim, 1.0f);
  }
  // The architecture's own tensors come last, so a plain Llama config draws the same model as before.
  auto around_one = [&](size_t n) {  // norm weights in [0.5, 1.5): a dropped norm changes the output
    std::vector<float> v(n);
    for (float& x : v) x = 1.0f + 0.5f * rng.symmetric();
    return v;
  };
  auto bias = [&](size_t n) {  // in +-0.5: large enough to matter
    std::vector<float> v(n);
    for (float& x : v) x = 0.5f * rng.symmetric();
    return v;
  };
  for (LayerWeights& L : w.layers) {
    if (cfg.qkv_bias) {
      L.bq = bias(qd);
      L.bk = bias(kv);
      L.bv = bias(kv);
    }
    if (cfg.qk_norm) {
      L.q_norm = around_one(cfg.head_dim());
      L.k_norm = around_one(cfg.head_dim());
    }
    if (cfg.post_norms) {
      L.post_attn_norm = around_one(dim);
      L.post_ffn_norm = around_one(dim);
    }
    if (cfg.attn_out_bias) L.bo = bias(dim);
    if (cfg.attn_sinks) {  // logits of the scores' size, so a sink takes a real share
      L.attn_sinks = bias(size_t(cfg.n_heads));
      for (float& x : L.attn_sinks) x *= 4.0f;
    }
  }
  if (cfg.moe.enabled()) {
    const MoeConfig& moe = cfg.moe;
    const size_t E = size_t(moe.n_experts), H = size_t(moe.expert_hidden), S = size_t(moe.shared_hidden);
    auto draw_experts = [&](LayerWeights& L) {
      ExpertWeights& x = L.experts;
      x.router = uniform(rng, E, dim);
      // gpt-oss clamps the gate and up at 7: draw them large enough that the clamp changes outputs.
      const float reach = cfg.activation == FfnActivation::SwigluOai ? 12.0f : 1.0f;
      auto scaled = [&](std::vector<float> v) {
        for (float& y : v) y *= reach;
        return v;
      };
      for (size_t e = 0; e < E; ++e) {
        x.gate.push_back(scaled(uniform(rng, H, dim)));
        x.down.push_back(uniform(rng, dim, H));
        x.up.push_back(scaled(uniform(rng, H, dim)));
      }
      if (moe.expert_biases) {
        x.router_bias = bias(E);
        x.gate_bias = bias(E * H);
        x.up_bias = bias(E * H);
        x.down_bias = bias(E * dim);
      }
      if (S > 0) {
        x.shared_gate = uniform(rng, 1, dim);
        x.shared_w_gate = uniform(rng, S, dim);
        x.shared_w_down = uniform(rng, dim, S);
        x.shared_w_up = uniform(rng, S, dim);
      }
    };
    for (LayerWeights& L : w.layers) draw_experts(L);
    if (w.mtp) draw_experts(w.mtp->layer);
  }
  if (with_rope_factors) {  // Llama 3.1's shape: high frequencies kept, low ones divided by up to 8
    const int half = cfg.rotary_dims() / 2;
    for (int i = 0; i < half; ++i) w.rope_freq_factors.push_back(1.0f + 7.0f * float(i) / float(std::max(1, half - 1)));
  }
  if (cfg.pooling == PoolingType::Rank)  // a reranker's head, one row per label (llama.cpp's n_cls_out)
    w.cls_out = uniform(rng, std::max<size_t>(1, cfg.classifier_labels.size()), dim);
  if (cfg.encoder) add_random_encoder_parts(cfg, rng, w);
  return m;
}

ModelFile random_model_outline(const LlamaConfig& cfg, uint64_t seed, std::optional<Vocab> given_vocab) {
  cfg.validate();
  ModelFile m;
  m.name = "random-" + std::to_string(seed);
  m.config = cfg;
  m.vocab = given_vocab ? std::move(*given_vocab) : make_synthetic_vocab(cfg.vocab_size);
  m.weights.layers.resize(size_t(cfg.n_layers));
  return m;
}

namespace {

// The values of one tensor, each its own splitmix64 stream, sliced over the cores (the same values on any count).
std::vector<float> draw_values(uint64_t stream, size_t n, float scale) {
  std::vector<float> v(n);
  const size_t parts = std::clamp<size_t>(n >> 22, 1, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (size_t p = 0; p < parts; ++p)
    threads.emplace_back([&, p] {
      const size_t first = n * p / parts, last = n * (p + 1) / parts;
      SplitMix64 rng{stream + first * 0x9e3779b97f4a7c15ull};  // the stream's state before value `first`
      for (size_t i = first; i < last; ++i) v[i] = rng.symmetric() * scale;
    });
  for (std::thread& t : threads) t.join();
  return v;
}

// Quantized tensors are blocks picked from a pool of 65,536 ggml-encoded random blocks of the same row length and
// range: ggml's search-based K-quant rounding of 30B weights takes hours on two cores; picking takes seconds, and
// the kernels read the same bytes per weight.
class QuantizedBlockDraw {
 public:
  static constexpr size_t kPoolBlocks = size_t(1) << 16;
  WeightMatrix draw(uint64_t stream, GgmlType type, const std::vector<uint64_t>& ne, size_t n, float scale) {
    const size_t block_bytes = quant::traits(type).block_bytes, row = ne[0];
    const std::vector<uint8_t>& pool = pool_of(type, row, scale);
    const size_t pool_blocks = pool.size() / block_bytes, blocks = n / size_t(quant::traits(type).block_size);
    std::vector<uint8_t> bytes(blocks * block_bytes);
    SplitMix64 rng{stream};
    for (size_t b = 0; b < blocks; ++b)
      std::memcpy(&bytes[b * block_bytes], &pool[(rng.next() % pool_blocks) * block_bytes], block_bytes);
    return WeightMatrix::from_blocks(type, int64_t(n / row), int64_t(row), std::move(bytes));
  }

 private:
  const std::vector<uint8_t>& pool_of(GgmlType type, size_t row, float scale) {
    std::vector<uint8_t>& pool = pools_[{int(type), row, scale}];
    if (pool.empty()) {
      const size_t rows = kPoolBlocks * size_t(quant::traits(type).block_size) / row;
      const std::vector<float> values = draw_values(fnv1a(quant::traits(type).name) ^ row, rows * row, scale);
      pool = encode_tensor("pool", {row, rows}, type, values.data());
    }
    return pool;
  }
  std::map<std::tuple<int, size_t, float>, std::vector<uint8_t>> pools_;
};

}  // namespace

TensorDraw random_tensor_draw(const LlamaConfig& cfg, uint64_t seed) {
  const bool clamped = cfg.activation == FfnActivation::SwigluOai;
  auto quantized = std::make_shared<QuantizedBlockDraw>();
  return [seed, clamped, quantized](const std::string& name, const std::vector<uint64_t>& ne, GgmlType type) {
    size_t n = 1;
    for (uint64_t d : ne) n *= size_t(d);
    auto ends_with = [&](std::string_view tail) { return name.ends_with(tail); };
    // The same ranges as make_random_model: norms 1, biases +-0.5, sinks +-2, matrices +-1/sqrt(in_features),
    // gpt-oss's gate and up 12 times wider so that the clamp applies.
    float scale = 1.0f / std::sqrt(float(ne[0]));
    if (ends_with("norm.weight")) return WeightMatrix(std::vector<float>(n, 1.0f));
    if (ends_with(".bias")) scale = 0.5f;
    if (ends_with("attn_sinks.weight")) scale = 2.0f;
    if (clamped && (ends_with("ffn_gate_exps.weight") || ends_with("ffn_up_exps.weight"))) scale *= 12.0f;
    const uint64_t stream = seed ^ fnv1a(name);
    if (quant::traits(type).block_size > 1) return quantized->draw(stream, type, ne, n, scale);
    return WeightMatrix(draw_values(stream, n, scale));
  };
}

}  // namespace parley
