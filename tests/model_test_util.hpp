// Shared helpers for the model-format tests (test_gguf.cpp, test_model_files.cpp).
#pragma once
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "model/gguf.hpp"
#include "model/gguf_writer.hpp"
#include "model/model_file.hpp"
#include "tests/test_support.hpp"

namespace parley_test {

using namespace parley;
namespace fs = std::filesystem;

using parley::test::shared_model;
using parley::test::TempDir;
inline const std::string kGguf = shared_model("stories260K.gguf");
inline const std::string kBin = shared_model("stories260K.bin");
inline const std::string kTok = shared_model("tok512.bin");

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}
template <class T>
inline void patch(std::string& bytes, size_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof(T));
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

inline bool same_bits(const WeightMatrix& a, const WeightMatrix& b) { return same_bits(a.to_f32(), b.to_f32()); }

// Every weight tensor of a model, by its GGUF name, decoded to F32.
inline std::vector<std::pair<std::string, std::vector<float>>> tensors_of(const ModelFile& m) {
  const LlamaWeights& w = m.weights;
  std::vector<std::pair<std::string, std::vector<float>>> out{{"token_embd.weight", w.token_embedding.to_f32()}};
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const LayerWeights& L = w.layers[l];
    const std::pair<const char*, std::vector<float>> parts[] = {
        {"attn_norm", L.attn_norm},      {"attn_q", L.wq.to_f32()},       {"attn_k", L.wk.to_f32()},
        {"attn_v", L.wv.to_f32()},       {"attn_output", L.wo.to_f32()},  {"ffn_norm", L.ffn_norm},
        {"ffn_gate", L.w_gate.to_f32()}, {"ffn_down", L.w_down.to_f32()}, {"ffn_up", L.w_up.to_f32()}};
    for (const auto& [n, v] : parts) out.emplace_back(b + n + ".weight", v);
    const std::pair<const char*, const std::vector<float>*> optional[] = {
        {"attn_q.bias", &L.bq},
        {"attn_k.bias", &L.bk},
        {"attn_v.bias", &L.bv},
        {"attn_q_norm.weight", &L.q_norm},
        {"attn_k_norm.weight", &L.k_norm},
        {"post_attention_norm.weight", &L.post_attn_norm},
        {"post_ffw_norm.weight", &L.post_ffn_norm},
        {"attn_output.bias", &L.bo},
        {"attn_sinks.weight", &L.attn_sinks}};
    for (const auto& [n, v] : optional)
      if (!v->empty()) out.emplace_back(b + n, *v);
    // Experts, one matrix each, and their router, biases and shared expert.
    const ExpertWeights& x = L.experts;
    if (!x.router.empty()) out.emplace_back(b + "ffn_gate_inp.weight", x.router.to_f32());
    for (size_t e = 0; e < x.gate.size(); ++e) {
      const std::string n = b + "expert " + std::to_string(e) + " ";
      out.emplace_back(n + "gate", x.gate[e].to_f32());
      out.emplace_back(n + "up", x.up[e].to_f32());
      out.emplace_back(n + "down", x.down[e].to_f32());
    }
    const std::pair<const char*, const std::vector<float>*> expert_vectors[] = {
        {"ffn_gate_inp.bias", &x.router_bias},
        {"ffn_gate_exps.bias", &x.gate_bias},
        {"ffn_up_exps.bias", &x.up_bias},
        {"ffn_down_exps.bias", &x.down_bias},
        {"ffn_gate_inp_shexp.weight", &x.shared_gate}};
    for (const auto& [n, v] : expert_vectors)
      if (!v->empty()) out.emplace_back(b + n, *v);
    if (!x.shared_w_gate.empty())
      for (const auto& [n, m] :
           {std::pair{"ffn_gate_shexp", &x.shared_w_gate}, std::pair{"ffn_up_shexp", &x.shared_w_up},
            std::pair{"ffn_down_shexp", &x.shared_w_down}})
        out.emplace_back(b + n + ".weight", m->to_f32());
  }
  if (!w.rope_freq_factors.empty()) out.emplace_back("rope factors", w.rope_freq_factors);
  out.emplace_back("output_norm.weight", w.output_norm);
  out.emplace_back("output.weight", w.output.to_f32());
  return out;
}

inline void require_same_config(const LlamaConfig& a, const LlamaConfig& b) {
  CHECK(a.dim == b.dim);
  CHECK(a.hidden_dim == b.hidden_dim);
  CHECK(a.n_layers == b.n_layers);
  CHECK(a.n_heads == b.n_heads);
  CHECK(a.n_kv_heads == b.n_kv_heads);
  CHECK(a.vocab_size == b.vocab_size);
  CHECK(a.max_seq_len == b.max_seq_len);
  CHECK(a.rope_theta == b.rope_theta);
  CHECK(a.norm_eps == b.norm_eps);
  CHECK(a.rope_layout == b.rope_layout);
  CHECK(a.tied_output == b.tied_output);
  CHECK(a.arch == b.arch);
  CHECK(a.head_dim() == b.head_dim());
  CHECK(a.rotary_dims() == b.rotary_dims());
  CHECK(a.rope_freq_scale == b.rope_freq_scale);
  CHECK(a.rope_attn_factor == b.rope_attn_factor);
  CHECK(a.local_rope.theta == b.local_rope.theta);
  CHECK(a.local_rope.freq_scale == b.local_rope.freq_scale);
  CHECK(a.sliding_window == b.sliding_window);
  CHECK(a.sliding_window_period == b.sliding_window_period);
  CHECK((a.query_scale == 0 ? 1.0f / std::sqrt(float(a.head_dim())) : a.query_scale) ==
        (b.query_scale == 0 ? 1.0f / std::sqrt(float(b.head_dim())) : b.query_scale));
  CHECK(a.attn_softcap == b.attn_softcap);
  CHECK(a.final_softcap == b.final_softcap);
  CHECK(a.scale_embeddings == b.scale_embeddings);
  CHECK(a.qkv_bias == b.qkv_bias);
  CHECK(a.qk_norm == b.qk_norm);
  CHECK(a.post_norms == b.post_norms);
  CHECK(a.activation == b.activation);
  CHECK(a.attn_out_bias == b.attn_out_bias);
  CHECK(a.attn_sinks == b.attn_sinks);
  CHECK(a.rope_yarn == b.rope_yarn);
  auto original_context = [](const LlamaConfig& c) {
    return c.rope_original_context ? c.rope_original_context : c.max_seq_len;
  };
  CHECK(original_context(a) == original_context(b));  // 0: the context length, as a GGUF without the key reads
  CHECK(a.moe.n_experts == b.moe.n_experts);
  CHECK(a.moe.n_used == b.moe.n_used);
  CHECK(a.moe.expert_hidden == b.moe.expert_hidden);
  CHECK(a.moe.shared_hidden == b.moe.shared_hidden);
  CHECK(a.moe.gating == b.moe.gating);
  CHECK(a.moe.normalize == b.moe.normalize);
  CHECK(a.moe.weights_scale == b.moe.weights_scale);
  CHECK(a.moe.expert_biases == b.moe.expert_biases);
}

inline void require_same_weights(const ModelFile& a, const ModelFile& b) {
  auto ta = tensors_of(a), tb = tensors_of(b);
  REQUIRE(ta.size() == tb.size());
  for (size_t i = 0; i < ta.size(); ++i) {
    INFO(ta[i].first);
    REQUIRE(same_bits(ta[i].second, tb[i].second));
  }
}

inline void require_same_vocab(const Vocab& a, const Vocab& b) {
  CHECK(a.kind == b.kind);
  CHECK(a.pieces == b.pieces);
  CHECK(a.scores == b.scores);
  CHECK(a.types == b.types);
  CHECK(a.bos_id == b.bos_id);
  CHECK(a.eos_id == b.eos_id);
  CHECK(a.unk_id == b.unk_id);
  CHECK(a.add_bos == b.add_bos);
  CHECK(a.add_space_prefix == b.add_space_prefix);
}

// Copies a GGUF through the writer, letting the test edit metadata and drop or add tensors.
inline void rewrite(const std::string& src, const std::string& dst, const std::function<void(GgufWriter&)>& edit,
                    const std::function<bool(const GgufTensorInfo&)>& keep = {}) {
  GgufFile f(src);
  GgufWriter w;
  for (const auto& [k, v] : f.metadata()) w.set(k, v);
  for (const auto& t : f.tensors())
    if (!keep || keep(t)) w.add_tensor_bytes(t.name, t.ne, t.type, {t.data, t.data + t.nbytes});
  edit(w);
  w.write(dst);
}

}  // namespace parley_test
