#include "model/convert.hpp"

#include <algorithm>
#include <stdexcept>

#include "model/gguf_writer.hpp"
#include "model/llama2c.hpp"
#include "model/tokenizer.hpp"

namespace parley {

namespace {

// llama.cpp's llama_ftype for a file whose 2-D weights are mostly `t`.
uint32_t file_type(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return 0;
    case GgmlType::F16: return 1;
    case GgmlType::Q8_0: return 7;
    case GgmlType::BF16: return 32;
  }
  throw std::invalid_argument("write_model_gguf: unsupported dtype " + ggml_type_name(t));
}

// NeoX pairs (i, i + d/2) become Adjacent pairs (2i, 2i+1): the same rotation frequencies, and
// as Q and K are permuted alike, every attention score is unchanged.
std::vector<float> neox_to_adjacent(const std::vector<float>& w, int n_heads, int head_dim, int row_len) {
  std::vector<float> out(w.size());
  const size_t half = head_dim / 2, row = row_len;
  for (size_t h = 0; h < static_cast<size_t>(n_heads); ++h)
    for (size_t i = 0; i < half; ++i) {
      const size_t base = h * head_dim;
      std::copy_n(&w[(base + i) * row], row, &out[(base + 2 * i) * row]);
      std::copy_n(&w[(base + half + i) * row], row, &out[(base + 2 * i + 1) * row]);
    }
  return out;
}

}  // namespace

void write_model_gguf(const ModelFile& m, const std::string& path, GgmlType dtype) {
  const LlamaConfig& c = m.config;
  c.validate();
  const LlamaWeights& w = m.weights;
  if (w.layers.size() != static_cast<size_t>(c.n_layers))
    throw std::invalid_argument("write_model_gguf: " + std::to_string(w.layers.size()) + " layers for n_layers " +
                                std::to_string(c.n_layers));

  GgufWriter g;
  g.set_string("general.architecture", "llama");
  g.set_string("general.name", m.name);
  g.set_u32("general.file_type", file_type(dtype));
  g.set_u32("general.alignment", static_cast<uint32_t>(kGgufDefaultAlignment));
  g.set_u32("llama.vocab_size", c.vocab_size);
  g.set_u32("llama.context_length", c.max_seq_len);
  g.set_u32("llama.embedding_length", c.dim);
  g.set_u32("llama.block_count", c.n_layers + (w.mtp ? 1 : 0));
  if (w.mtp) g.set_u32("llama.nextn_predict_layers", 1);
  g.set_u32("llama.feed_forward_length", c.hidden_dim);
  g.set_u32("llama.rope.dimension_count", c.head_dim());
  g.set_f32("llama.rope.freq_base", c.rope_theta);
  g.set_u32("llama.attention.head_count", c.n_heads);
  g.set_u32("llama.attention.head_count_kv", c.n_kv_heads);
  g.set_f32("llama.attention.layer_norm_rms_epsilon", c.norm_eps);

  if (m.vocab) {
    const Vocab& v = *m.vocab;
    if (v.scores.size() != v.pieces.size() || v.types.size() != v.pieces.size())
      throw std::invalid_argument("write_model_gguf: vocab pieces, scores and types differ in length");
    const bool spm = v.kind == TokenizerKind::SentencePiece;
    std::vector<std::string> tokens = v.pieces;
    if (spm)  // SentencePiece files spell the space as U+2581
      for (auto& t : tokens)
        for (size_t at = t.find(' '); at != std::string::npos; at = t.find(' ', at + 3)) t.replace(at, 1, "\xE2\x96\x81");
    std::vector<int32_t> types;
    for (TokenType t : v.types) types.push_back(static_cast<int32_t>(t));
    g.set_string("tokenizer.ggml.model", spm ? "llama" : "gpt2");
    g.set("tokenizer.ggml.tokens", GgufValue::strings(tokens));
    g.set("tokenizer.ggml.scores", GgufValue::floats(v.scores));
    g.set("tokenizer.ggml.token_type", GgufValue::int32s(types));
    if (!spm) {
      g.set_string("tokenizer.ggml.pre", v.pre);
      g.set("tokenizer.ggml.merges", GgufValue::strings(v.merges));
    }
    auto set_id = [&](const char* key, int32_t id) {  // a token the vocabulary lacks has no key
      if (id >= 0) g.set_u32(key, static_cast<uint32_t>(id));
    };
    set_id("tokenizer.ggml.bos_token_id", v.bos_id);
    set_id("tokenizer.ggml.eos_token_id", v.eos_id);
    set_id("tokenizer.ggml.unknown_token_id", v.unk_id);
    set_id("tokenizer.ggml.eot_token_id", v.eot_id);
    set_id("tokenizer.ggml.eom_token_id", v.eom_id);
    g.set_bool("tokenizer.ggml.add_bos_token", v.add_bos);
    g.set_bool("tokenizer.ggml.add_eos_token", v.add_eos);
    g.set_bool("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
    if (!m.chat_template.empty()) g.set_string("tokenizer.chat_template", m.chat_template);
  }

  const uint64_t dim = c.dim, hidden = c.hidden_dim, kv = c.kv_dim(), vocab = c.vocab_size;
  auto add = [&](const std::string& name, const std::vector<float>& data, std::vector<uint64_t> ne) {
    uint64_t n = 1;
    for (uint64_t d : ne) n *= d;
    if (data.size() != n)
      throw std::invalid_argument("write_model_gguf: tensor '" + name + "' has " + std::to_string(data.size()) +
                                  " values, its shape needs " + std::to_string(n));
    GgmlType t = dtype;
    if (ne.size() == 1) t = GgmlType::F32;  // norms stay F32, as llama.cpp keeps them
    // Q8_0 blocks run along rows of 32; other rows keep F16 (llama.cpp's quantizer also falls back).
    else if (t == GgmlType::Q8_0 && ne[0] % kQ8Block != 0) t = GgmlType::F16;
    g.add_tensor(name, std::move(ne), t, data.data());
  };
  const bool neox = c.rope_layout == RopeLayout::NeoX;
  add("token_embd.weight", w.token_embedding, {dim, vocab});
  auto add_layer = [&](int l, const LayerWeights& L) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add(b + "attn_norm.weight", L.attn_norm, {dim});
    if (neox && (L.wq.size() != dim * dim || L.wk.size() != kv * dim))
      throw std::invalid_argument("write_model_gguf: layer " + std::to_string(l) + " wq/wk have the wrong size");
    add(b + "attn_q.weight", neox ? neox_to_adjacent(L.wq, c.n_heads, c.head_dim(), c.dim) : L.wq, {dim, dim});
    add(b + "attn_k.weight", neox ? neox_to_adjacent(L.wk, c.n_kv_heads, c.head_dim(), c.dim) : L.wk, {dim, kv});
    add(b + "attn_v.weight", L.wv, {dim, kv});
    add(b + "attn_output.weight", L.wo, {dim, dim});
    add(b + "ffn_norm.weight", L.ffn_norm, {dim});
    add(b + "ffn_gate.weight", L.w_gate, {dim, hidden});
    add(b + "ffn_down.weight", L.w_down, {hidden, dim});
    add(b + "ffn_up.weight", L.w_up, {dim, hidden});
  };
  for (int l = 0; l < c.n_layers; ++l) add_layer(l, w.layers[size_t(l)]);
  if (w.mtp) {  // llama.cpp's nextn layout: the block after the main layers, plus its projection and norms
    const std::string b = "blk." + std::to_string(c.n_layers) + ".nextn.";
    add_layer(c.n_layers, w.mtp->layer);
    add(b + "enorm.weight", w.mtp->enorm, {dim});
    add(b + "hnorm.weight", w.mtp->hnorm, {dim});
    add(b + "eh_proj.weight", w.mtp->eh_proj, {2 * dim, dim});
    add(b + "shared_head_norm.weight", w.mtp->shared_head_norm, {dim});
  }
  add("output_norm.weight", w.output_norm, {dim});
  if (!c.tied_output) add("output.weight", w.output, {dim, vocab});
  g.write(path);
}

void convert_llama2c(const std::string& checkpoint, const std::string& tokenizer_bin, const std::string& out,
                     GgmlType dtype) {
  ModelFile m = read_llama2c_checkpoint(checkpoint);
  m.vocab = read_llama2c_tokenizer(tokenizer_bin, m.config.vocab_size);
  write_model_gguf(m, out, dtype);
}

}  // namespace parley
