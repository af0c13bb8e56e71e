#include "model/llama2c.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "model/gguf.hpp"

namespace parley {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("llama2.c checkpoint '" + path + "': " + what);
}

// Hands out consecutive F32 arrays from the mapping, refusing to read past its end.
struct FloatReader {
  const std::string& path;
  const uint8_t* base;
  uint64_t size;
  uint64_t pos;

  void read(const std::string& what, uint64_t n, std::vector<float>& out) {
    skip(what, n);
    out.resize(n);
    std::memcpy(out.data(), base + pos - n * 4, n * 4);
  }
  void skip(const std::string& what, uint64_t n) {
    if (n > (size - pos) / 4)
      fail(path, "truncated while reading " + what + " (need " + std::to_string(n * 4) + " bytes at offset " +
                     std::to_string(pos) + ", file has " + std::to_string(size) + ")");
    pos += n * 4;
  }
};

}  // namespace

ModelFile read_llama2c_checkpoint(const std::string& path) {
  MappedFile map(path);
  constexpr uint64_t kHeaderBytes = 7 * sizeof(int32_t);
  if (map.size() < kHeaderBytes)
    fail(path, "truncated while reading the header (need 28 bytes, file has " + std::to_string(map.size()) + ")");
  int32_t h[7];
  std::memcpy(h, map.data(), sizeof(h));

  ModelFile m;
  m.name = std::filesystem::path(path).stem().string();
  LlamaConfig& c = m.config;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.tied_output = h[5] > 0;  // run.c: a negative vocab_size flags an unshared classifier
  c.vocab_size = h[5] == INT32_MIN ? 0 : (h[5] < 0 ? -h[5] : h[5]);
  c.max_seq_len = h[6];
  c.rope_layout = RopeLayout::Adjacent;
  c.rope_theta = 10000.0f;
  c.norm_eps = 1e-5f;
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    fail(path, std::string("bad header (is this a llama2.c checkpoint?): ") + e.what());
  }

  const uint64_t dim = c.dim, hidden = c.hidden_dim, layers = c.n_layers, vocab = c.vocab_size;
  const uint64_t kv_dim = static_cast<uint64_t>(c.kv_dim()), head_dim = c.head_dim();
  // Every read is bounds-checked before it allocates, so a lying header cannot exhaust memory.
  FloatReader r{path, map.data(), map.size(), kHeaderBytes};
  LlamaWeights& w = m.weights;
  if (layers * dim * 8 > map.size())  // each layer has at least its two norms
    fail(path, "truncated: the header's " + std::to_string(layers) + " layers of width " + std::to_string(dim) +
                   " cannot fit in " + std::to_string(map.size()) + " bytes");
  w.layers.resize(layers);
  r.read("token_embedding_table", vocab * dim, w.token_embedding.f32());
  // run.c stores each weight kind for all layers contiguously.
  auto per_layer = [&](const char* what, uint64_t n, auto LayerWeights::*field) {
    for (uint64_t l = 0; l < layers; ++l) {
      std::vector<float> values;
      r.read(std::string(what) + " of layer " + std::to_string(l), n, values);
      w.layers[l].*field = std::move(values);
    }
  };
  per_layer("rms_att_weight", dim, &LayerWeights::attn_norm);
  per_layer("wq", dim * dim, &LayerWeights::wq);
  per_layer("wk", kv_dim * dim, &LayerWeights::wk);
  per_layer("wv", kv_dim * dim, &LayerWeights::wv);
  per_layer("wo", dim * dim, &LayerWeights::wo);
  per_layer("rms_ffn_weight", dim, &LayerWeights::ffn_norm);
  per_layer("w1", hidden * dim, &LayerWeights::w_gate);
  per_layer("w2", dim * hidden, &LayerWeights::w_down);
  per_layer("w3", hidden * dim, &LayerWeights::w_up);
  r.read("rms_final_weight", dim, w.output_norm);
  r.skip("freq_cis_real", c.max_seq_len * head_dim / 2);
  r.skip("freq_cis_imag", c.max_seq_len * head_dim / 2);
  if (!c.tied_output) r.read("wcls", vocab * dim, w.output.f32());
  if (r.pos != map.size())
    fail(path, "has " + std::to_string(map.size() - r.pos) + " unexpected trailing bytes (expected " +
                   std::to_string(r.pos) + " bytes for its header)");
  return m;
}

}  // namespace parley
