// Broken model files, the qwen2 arch row, llama2.c checkpoint variants, configs and random models.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "model/convert.hpp"
#include "model/gguf.hpp"
#include "model/gguf_writer.hpp"
#include "model/llama2c.hpp"
#include "model/model_file.hpp"
#include "model/random_model.hpp"
#include "model/tokenizer.hpp"
#include "model_test_util.hpp"

using namespace parley;
using namespace parley_test;
#include <set>

TEST_CASE("broken GGUF files give their own error", "[gguf]") {
  TempDir tmp;
  const std::string ref = read_bytes(kGguf);
  const std::string path = tmp / "broken.gguf";

  SECTION("bad magic") {
    write_bytes(path, "GGML" + ref.substr(4, 100));
    REQUIRE_THROWS_WITH(GgufFile(path), Catch::Contains("not a GGUF file (bad magic)"));
  }
  SECTION("unsupported version") {
    std::string b = ref;
    patch<uint32_t>(b, 4, 4);
    write_bytes(path, b);
    REQUIRE_THROWS_WITH(GgufFile(path), Catch::Contains("unsupported GGUF version 4"));
  }
  SECTION("truncated header") {
    write_bytes(path, ref.substr(0, 100));
    REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("truncated while reading value of key 'general.name'"));
    write_bytes(path, ref.substr(0, 6));
    REQUIRE_THROWS_WITH(GgufFile(path), Catch::Contains("truncated while reading version"));
  }
  SECTION("every cut through the header or the data is reported as truncated") {
    for (size_t len = 0; len < ref.size(); len += len < 14304 ? 97 : 65521) {
      INFO(len);
      write_bytes(path, ref.substr(0, len));
      REQUIRE_THROWS_WITH(GgufFile(path), Catch::Contains("truncated"));
    }
  }
  SECTION("truncated tensor data") {
    write_bytes(path, ref.substr(0, ref.size() - 100));
    REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("truncated: data of tensor 'output_norm.weight'") &&
                                                   Catch::Contains("extends past the end of the file"));
  }
  SECTION("absurd counts") {
    std::string b = ref;
    patch<uint64_t>(b, 8, uint64_t{1} << 40);
    write_bytes(path, b);
    REQUIRE_THROWS_WITH(GgufFile(path), Catch::Contains("absurd counts"));
    b = ref;
    // The key, its value type (array) and element type (string), then the array length.
    patch<uint64_t>(b, ref.find("tokenizer.ggml.tokens") + 21 + 4 + 4, uint64_t{1} << 50);
    write_bytes(path, b);
    REQUIRE_THROWS_WITH(GgufFile(path), Catch::Contains("key 'tokenizer.ggml.tokens' declares 1125899906842624 "
                                                        "array elements but only"));
  }
  SECTION("unsupported tensor types, and rows that are not whole blocks") {
    GgufWriter w;
    const float one = 1.0f;
    w.add_tensor("w", {1}, GgmlType::F32, &one);
    w.write(path);
    const std::string ref = read_bytes(path);
    const size_t type_at = 24 + 8 + 1 + 4 + 8;  // header, name, n_dims, ne[0], then the type
    for (auto [id, what] :
         {std::pair<uint32_t, const char*>{10, "tensor 'w' has ggml type q2_K (id 10), which Parley does not load"},
          {16, "tensor 'w' has ggml type iq2_xxs (id 16)"},
          {15, "tensor 'w' has ggml type q8_K (id 15)"},
          {999, "tensor 'w' has ggml type unknown ggml type 999 (id 999)"},
          {12, "tensor 'w' (q4_K): row length 1 is not a multiple of the block size 256"}}) {
      std::string b = ref;
      patch<uint32_t>(b, type_at, id);
      write_bytes(path, b);
      REQUIRE_THROWS_WITH(GgufFile(path), Catch::Contains(what));
    }
  }
  SECTION("missing key") {
    rewrite(kGguf, path, [](GgufWriter& w) { w.remove("llama.block_count"); });
    REQUIRE_THROWS_WITH(load_model_file(path),
                        Catch::Contains("GGUF file '" + path + "': missing key 'llama.block_count'"));
  }
  SECTION("wrong metadata type") {
    rewrite(kGguf, path, [](GgufWriter& w) { w.set_string("llama.block_count", "5"); });
    REQUIRE_THROWS_WITH(load_model_file(path),
                        Catch::Contains("key 'llama.block_count' has type string, expected an integer"));
  }
  SECTION("shape mismatch") {
    rewrite(kGguf, path, [](GgufWriter& w) { w.set_u32("llama.feed_forward_length", 171); });
    REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("shape mismatch for tensor 'blk.0.ffn_gate.weight': "
                                                               "expected [64, 171], found [64, 172]"));
  }
  SECTION("missing tensor") {
    rewrite(
        kGguf, path, [](GgufWriter&) {}, [](const GgufTensorInfo& t) { return t.name != "blk.4.ffn_up.weight"; });
    REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("missing tensor 'blk.4.ffn_up.weight'"));
  }
  SECTION("unexpected tensor") {
    rewrite(kGguf, path, [](GgufWriter& w) {
      const float z[64] = {};
      w.add_tensor("blk.0.attn_rot_embd", {64}, GgmlType::F32, z);
    });
    REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("unexpected tensor 'blk.0.attn_rot_embd'"));
  }
  SECTION("unsupported architecture") {
    rewrite(kGguf, path, [](GgufWriter& w) { w.set_string("general.architecture", "gptj"); });
    REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("unsupported architecture 'gptj'"));
  }
  SECTION("inconsistent config") {
    rewrite(kGguf, path, [](GgufWriter& w) { w.set_u32("llama.attention.head_count_kv", 3); });
    REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("n_kv_heads"));
  }
  SECTION("math-changing keys we do not implement are refused, not ignored") {
    rewrite(kGguf, path, [](GgufWriter& w) { w.set_string("llama.rope.scaling.type", "dynamic"); });
    REQUIRE_THROWS_WITH(load_model_file(path),
                        Catch::Contains("RoPE scaling 'dynamic' (key 'llama.rope.scaling.type') is not supported"));
    rewrite(kGguf, path, [](GgufWriter& w) { w.set_u32("llama.expert_count", 8); });  // a Mixtral needs its count
    REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("llama.expert_used_count"));
    rewrite(kGguf, path, [](GgufWriter& w) {
      w.set_u32("llama.expert_count", 8);
      w.set_u32("llama.expert_used_count", 2);
    });
    REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("missing tensor 'blk.0.ffn_gate_inp.weight'"));
    rewrite(kGguf, path, [](GgufWriter& w) { w.set_u32("llama.attention.value_length", 16); });
    REQUIRE_THROWS_WITH(load_model_file(path),
                        Catch::Contains("attention.value_length' differs from attention.key_length 8"));
    rewrite(kGguf, path, [](GgufWriter& w) {  // Q is then [64, 128]
      w.set_u32("llama.attention.key_length", 16);
      w.set_u32("llama.rope.dimension_count", 16);
    });
    REQUIRE_THROWS_WITH(load_model_file(path),
                        Catch::Contains("shape mismatch for tensor 'blk.0.attn_q.weight': expected [64, 128]"));
    rewrite(kGguf, path, [](GgufWriter& w) { w.set_u32("llama.rope.dimension_count", 4); });
    REQUIRE_THROWS_WITH(load_model_file(path),
                        Catch::Contains("rope.dimension_count' must equal the head size for llama"));
    rewrite(kGguf, path, [](GgufWriter& w) { w.set_string("llama.rope.scaling.type", "none"); });
    REQUIRE(load_model_file(path).config.dim == 64);
  }
}

TEST_CASE("qwen2 GGUFs load with NeoX RoPE, and a partial set of biases is refused", "[gguf]") {
  TempDir tmp;
  // Re-label stories260K as qwen2: same tensors, keys under "qwen2.".
  auto as_qwen2 = [](GgufWriter& w) {
    w.set_string("general.architecture", "qwen2");
    std::vector<std::pair<std::string, GgufValue>> renamed;
    for (const auto& [k, v] : w.metadata())
      if (k.starts_with("llama.")) renamed.emplace_back("qwen2." + k.substr(6), v);
    for (const auto& [k, v] : renamed) {
      w.remove("llama." + k.substr(6));
      w.set(k, v);
    }
  };
  const std::string path = tmp / "qwen2.gguf";
  rewrite(kGguf, path, as_qwen2);
  ModelFile q = load_model_file(path);
  CHECK(q.config.rope_layout == RopeLayout::NeoX);
  require_same_weights(q, load_model_file(kGguf));

  // Writing it as "llama" permutes Q/K rows from NeoX pairs (i, i+4) to adjacent pairs (2i, 2i+1).
  const std::string llama = tmp / "as_llama.gguf";
  q.config.arch = "llama";
  write_model_gguf(q, llama, GgmlType::F32);
  ModelFile l = load_model_file(llama);
  CHECK(l.config.rope_layout == RopeLayout::Adjacent);
  const int hd = q.config.head_dim(), d = q.config.dim;
  for (int h = 0; h < q.config.n_kv_heads; ++h)
    for (int i = 0; i < hd / 2; ++i)
      for (int c = 0; c < d; ++c) {
        REQUIRE(l.weights.layers[1].wk[((h * hd) + 2 * i) * d + c] == q.weights.layers[1].wk[(h * hd + i) * d + c]);
        REQUIRE(l.weights.layers[1].wk[((h * hd) + 2 * i + 1) * d + c] ==
                q.weights.layers[1].wk[(h * hd + hd / 2 + i) * d + c]);
      }
  CHECK(same_bits(l.weights.layers[1].wv, q.weights.layers[1].wv));

  rewrite(kGguf, path, [&](GgufWriter& w) {
    as_qwen2(w);
    const float z[64] = {};
    w.add_tensor("blk.0.attn_q.bias", {64}, GgmlType::F32, z);
  });
  REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("missing tensor 'blk.0.attn_k.bias'"));
}

TEST_CASE("llama2.c checkpoints: separate classifier and short files", "[gguf]") {
  TempDir tmp;
  const std::string bin = read_bytes(kBin);
  const std::string path = tmp / "model.bin";

  SECTION("a negative vocab_size means a separate wcls at the end") {
    std::string b = bin;
    patch<int32_t>(b, 20, -512);
    std::vector<float> wcls(512 * 64);
    for (size_t i = 0; i < wcls.size(); ++i) wcls[i] = static_cast<float>(i % 97) / 97.0f - 0.5f;
    b.append(reinterpret_cast<const char*>(wcls.data()), wcls.size() * 4);
    write_bytes(path, b);
    ModelFile m = load_model_file(path);
    CHECK_FALSE(m.config.tied_output);
    CHECK(m.config.vocab_size == 512);
    CHECK(same_bits(m.weights.output, wcls));
    CHECK(&m.weights.output_head() == &m.weights.output);
    ModelFile ref = load_model_file(kBin);
    CHECK(same_bits(m.weights.token_embedding, ref.weights.token_embedding));
    CHECK(same_bits(m.weights.output_norm, ref.weights.output_norm));

    const std::string gguf = tmp / "untied.gguf";
    write_model_gguf(m, gguf, GgmlType::F32);
    CHECK(GgufFile(gguf).tensors().back().name == "output.weight");
    ModelFile back = load_model_file(gguf);
    require_same_config(back.config, m.config);
    require_same_weights(back, m);
  }
  SECTION("short files") {
    write_bytes(path, bin.substr(0, 10));
    REQUIRE_THROWS_WITH(load_model_file(path),
                        Catch::Contains("llama2.c checkpoint '" + path + "': truncated while reading the header"));
    write_bytes(path, bin.substr(0, 5000));
    REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("truncated while reading token_embedding_table"));
    write_bytes(path, bin.substr(0, bin.size() - 8));
    REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("truncated while reading freq_cis_imag"));
    write_bytes(path, bin.substr(0, 28 + 4 * (32768 + 5 * 64 + 4096 + 7)));
    REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("truncated while reading wq of layer 1"));
  }
  SECTION("every cut is reported as truncated") {
    for (size_t len = 0; len < bin.size(); len += 9973) {
      INFO(len);
      write_bytes(path, bin.substr(0, len));
      REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("truncated"));
    }
  }
  SECTION("not a checkpoint") {
    write_bytes(path, std::string(40, '\0'));
    REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("bad header"));
    write_bytes(path, bin + "xxxx");
    REQUIRE_THROWS_WITH(load_model_file(path), Catch::Contains("4 unexpected trailing bytes"));
    REQUIRE_THROWS_WITH(load_model_file(tmp / "absent.bin"), Catch::Contains("cannot open"));
  }
}

TEST_CASE("LlamaConfig::validate names the inconsistent field", "[gguf]") {
  LlamaConfig c = builtin_model_config();
  REQUIRE_NOTHROW(c.validate());
  REQUIRE_NOTHROW(bench_110m_config().validate());
  auto broken = [&](auto change) {
    LlamaConfig b = c;
    change(b);
    return b;
  };
  CHECK_THROWS_WITH(broken([](LlamaConfig& b) { b.dim = 0; }).validate(), Catch::Contains("dim must be positive"));
  CHECK_THROWS_WITH(broken([](LlamaConfig& b) { b.max_seq_len = -1; }).validate(), Catch::Contains("max_seq_len"));
  CHECK_THROWS_WITH(broken([](LlamaConfig& b) { b.n_heads = 7; }).validate(), Catch::Contains("n_heads (7)"));
  CHECK_THROWS_WITH(broken([](LlamaConfig& b) { b.n_kv_heads = 3; }).validate(), Catch::Contains("n_kv_heads (3)"));
  CHECK_THROWS_WITH(broken([](LlamaConfig& b) { b.dim = 24; }).validate(), Catch::Contains("head_dim"));
  CHECK_THROWS_AS(broken([](LlamaConfig& b) { b.vocab_size = 0; }).validate(), std::invalid_argument);
}

TEST_CASE("built-in and bench configs", "[gguf]") {
  LlamaConfig b = builtin_model_config();
  CHECK((b.dim == 64 && b.hidden_dim == 192 && b.n_layers == 4 && b.n_heads == 8 && b.n_kv_heads == 4));
  CHECK((b.vocab_size == 512 && b.max_seq_len == 1024 && b.rope_layout == RopeLayout::Adjacent && b.tied_output));
  LlamaConfig l = bench_110m_config();
  CHECK((l.dim == 768 && l.hidden_dim == 2048 && l.n_layers == 12 && l.n_heads == 12 && l.n_kv_heads == 12));
  CHECK((l.vocab_size == 32000 && l.max_seq_len == 2048 && l.tied_output));
}

TEST_CASE("random models are deterministic and round-trip through GGUF", "[gguf]") {
  TempDir tmp;
  const LlamaConfig cfg = builtin_model_config();
  ModelFile a = make_random_model(cfg, 42), a2 = make_random_model(cfg, 42), c = make_random_model(cfg, 43);
  write_model_gguf(a, tmp / "a.gguf", GgmlType::F32);
  write_model_gguf(a2, tmp / "a2.gguf", GgmlType::F32);
  write_model_gguf(c, tmp / "c.gguf", GgmlType::F32);
  CHECK(read_bytes(tmp / "a.gguf") == read_bytes(tmp / "a2.gguf"));
  CHECK_FALSE(same_bits(a.weights.token_embedding, c.weights.token_embedding));

  ModelFile back = load_model_file(tmp / "a.gguf");
  CHECK(back.name == "random-42");
  require_same_config(back.config, a.config);
  require_same_weights(back, a);
  require_same_vocab(*back.vocab, *a.vocab);

  // Pins the generator: splitmix64 from seed 0 first yields 0xe220a8397b1dcdaf (its reference value).
  ModelFile z = make_random_model(cfg, 0);
  const float u = static_cast<float>(0xe220a8397b1dcdafull >> 40) * (2.0f / 16777216.0f) - 1.0f;
  CHECK(z.weights.token_embedding[0] == u * (1.0f / 8.0f));

  for (const auto& [name, w] : tensors_of(a)) {
    INFO(name);
    if (w.empty()) continue;
    const bool norm = name.find("norm") != std::string::npos;
    const float in = name.find("ffn_down") != std::string::npos ? float(cfg.hidden_dim) : float(cfg.dim);
    for (float x : w) REQUIRE((norm ? x == 1.0f : std::fabs(x) <= 1.0f / std::sqrt(in)));
  }

  LlamaConfig untied = cfg;
  untied.tied_output = false;
  ModelFile u2 = make_random_model(untied, 42);
  CHECK(u2.weights.output.size() == 512u * 64u);
  CHECK(same_bits(u2.weights.layers[3].w_up, a.weights.layers[3].w_up));  // the head is drawn last
}

TEST_CASE("a synthetic vocabulary past the generator's pieces is padded with unused placeholders", "[gguf]") {
  const Vocab small = make_synthetic_vocab(32000), big = make_synthetic_vocab(151936);  // qwen3-0.6b's size
  REQUIRE(big.size() == 151936);
  CHECK(big.pieces.back() == "[PAD" + std::to_string(151936 - 36956 - 1) + "]");
  CHECK(big.types.back() == TokenType::Unused);
  const std::string text = "Once upon a time, the little girl [PAD3] said hello.";
  CHECK(Tokenizer(big).encode(text, true) == Tokenizer(small).encode(text, true));  // placeholders never encode
}

TEST_CASE("the synthetic vocabulary is unique, ordered and merge-friendly", "[gguf]") {
  CHECK_THROWS_WITH(make_synthetic_vocab(353), Catch::Contains("below the minimum 354"));
  CHECK(make_synthetic_vocab(354).size() == 354);
  Vocab v = make_synthetic_vocab(32000);
  REQUIRE(v.size() == 32000);
  REQUIRE(v.scores.size() == 32000u);
  REQUIRE(v.types.size() == 32000u);
  CHECK(v.pieces[0] == "<unk>");
  CHECK(v.pieces[1] == "<s>");
  CHECK(v.pieces[2] == "</s>");
  CHECK(v.pieces[3] == "<0x00>");
  CHECK(v.pieces[258] == "<0xFF>");
  CHECK(v.types[258] == TokenType::Byte);
  CHECK(v.pieces[259] == " ");
  CHECK(v.pieces[259 + 94] == "~");
  std::set<std::string> seen(v.pieces.begin(), v.pieces.end());
  CHECK(seen.size() == v.pieces.size());
  for (const char* piece : {" the", " Once", " upon", "ing", " little"}) CHECK(seen.contains(piece));
  std::set<std::string> earlier;
  for (int i = 259; i < v.size(); ++i) {
    const std::string& p = v.pieces[i];
    INFO(p);
    REQUIRE(v.types[i] == TokenType::Normal);
    if (i > 259) REQUIRE(v.scores[i] < v.scores[i - 1]);
    if (p.size() > 1) REQUIRE(earlier.contains(p.substr(0, p.size() - 1)));
    earlier.insert(p);
  }
}
