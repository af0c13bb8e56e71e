// GGUF reading and writing, number formats, and llama2.c -> GGUF conversion.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "model/convert.hpp"
#include "model/gguf.hpp"
#include "model/gguf_writer.hpp"
#include "model/llama2c.hpp"
#include "model/model_file.hpp"
#include "model/model_shapes.hpp"
#include "kernels/quant/half.hpp"
#include "kernels/quant/quantize.hpp"
#include "model/random_model.hpp"
#include "model_test_util.hpp"

using namespace parley;
using namespace parley_test;

TEST_CASE("GgufFile parses stories260K.gguf", "[gguf]") {
  GgufFile f(kGguf);
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 32);
  CHECK(f.metadata().size() == 24);
  CHECK(f.tensors().size() == 47);
  CHECK(f.data_offset() == 14304);  // 14274 header bytes rounded up to 32
  CHECK(f.get_string("general.architecture") == "llama");
  CHECK(f.get_int("llama.block_count") == 5);
  CHECK(f.get_float("llama.rope.freq_base") == 10000.0);
  CHECK(f.get_bool("tokenizer.ggml.add_bos_token"));
  CHECK_FALSE(f.get_bool("tokenizer.ggml.add_eos_token"));
  CHECK(f.get_string_array("tokenizer.ggml.tokens").at(259) == "\xE2\x96\x81t");
  CHECK(f.get_float_array("tokenizer.ggml.scores").at(511) == -252.0f);
  CHECK(f.get_int_array("tokenizer.ggml.token_type").at(0) == 2);
  CHECK(f.get_int("missing.key", 7) == 7);
  const GgufTensorInfo& k = f.tensor("blk.0.attn_k.weight");
  CHECK(k.ne == std::vector<uint64_t>{64, 32});
  CHECK(k.type == GgmlType::F32);
  CHECK(k.nbytes == 64 * 32 * 4);
  CHECK(k.offset == 147712);
  CHECK(reinterpret_cast<uintptr_t>(k.data) % 32 == 0);
  CHECK(f.find_tensor("output.weight") == nullptr);
}

TEST_CASE("A GGUF read from memory equals the same file mapped, and errors carry the name given", "[gguf]") {
  std::ifstream in(kGguf, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const GgufFile mapped(kGguf), held("in memory", bytes);
  CHECK(held.metadata() == mapped.metadata());
  REQUIRE(held.tensors().size() == mapped.tensors().size());
  const GgufTensorInfo& t = held.tensor("blk.0.attn_k.weight");
  CHECK(std::memcmp(t.data, mapped.tensor("blk.0.attn_k.weight").data, t.nbytes) == 0);
  bytes.resize(100);
  CHECK_THROWS_WITH(GgufFile("in memory", bytes), Catch::StartsWith("GGUF file 'in memory': truncated"));
}

TEST_CASE("stories260K: the GGUF and llama2.c loaders agree bit for bit", "[gguf]") {
  ModelFile g = load_model_file(kGguf);
  ModelFile b = load_model_file(kBin);
  CHECK(g.name == "stories260K_real");
  CHECK(b.name == "stories260K");
  CHECK(g.config.dim == 64);
  CHECK(g.config.hidden_dim == 172);
  CHECK(g.config.n_layers == 5);
  CHECK(g.config.n_heads == 8);
  CHECK(g.config.n_kv_heads == 4);
  CHECK(g.config.vocab_size == 512);
  CHECK(g.config.max_seq_len == 512);
  CHECK(g.config.tied_output);
  CHECK(g.config.rope_layout == RopeLayout::Adjacent);
  require_same_config(g.config, b.config);
  require_same_weights(g, b);
  CHECK(g.weights.output.empty());
  CHECK(&g.weights.output_head() == &g.weights.token_embedding);

  REQUIRE(g.vocab.has_value());
  CHECK_FALSE(b.vocab.has_value());
  const Vocab& v = *g.vocab;
  CHECK(v.kind == TokenizerKind::SentencePiece);
  CHECK(v.size() == 512);
  CHECK(v.pieces[0] == "<unk>");
  CHECK(v.pieces[1] == "<s>");
  CHECK(v.pieces[3] == "<0x00>");
  CHECK(v.pieces[259] == " t");  // U+2581 mapped to a space
  CHECK(v.pieces[265] == " the");
  CHECK(v.types[0] == TokenType::Unknown);
  CHECK(v.types[2] == TokenType::Control);
  CHECK(v.types[258] == TokenType::Byte);
  CHECK(v.types[259] == TokenType::Normal);
  CHECK(v.scores[511] == -252.0f);
  CHECK(v.bos_id == 1);
  CHECK(v.eos_id == 2);
  CHECK(v.unk_id == 0);
  CHECK(v.add_bos);
  CHECK(v.add_space_prefix);
}

TEST_CASE("convert_llama2c writes what llama.cpp's converter wrote", "[gguf]") {
  TempDir tmp;
  const std::string out = tmp / "converted.gguf";
  convert_llama2c(kBin, kTok, out, GgmlType::F32);

  ModelFile back = load_model_file(out);
  ModelFile bin = load_model_file(kBin);
  require_same_config(back.config, bin.config);
  require_same_weights(back, bin);
  REQUIRE(back.vocab.has_value());
  require_same_vocab(*back.vocab, *load_model_file(kGguf).vocab);

  GgufFile mine(out), ref(kGguf);
  REQUIRE(mine.metadata().size() == ref.metadata().size());
  for (size_t i = 0; i < ref.metadata().size(); ++i) {
    const auto& [key, value] = ref.metadata()[i];
    INFO(key);
    CHECK(mine.metadata()[i].first == key);
    CHECK(mine.metadata()[i].second.type() == value.type());
    if (key != "general.name") CHECK(mine.metadata()[i].second == value);
  }
  CHECK(mine.get_string("general.name") == "stories260K");
  REQUIRE(mine.tensors().size() == ref.tensors().size());
  for (size_t i = 0; i < ref.tensors().size(); ++i) {
    const GgufTensorInfo &a = mine.tensors()[i], &b = ref.tensors()[i];
    INFO(b.name);
    CHECK(a.name == b.name);
    CHECK(a.ne == b.ne);
    CHECK(a.type == b.type);
    CHECK(a.offset == b.offset);
    REQUIRE(a.nbytes == b.nbytes);
    CHECK(std::memcmp(a.data, b.data, a.nbytes) == 0);
  }
}

TEST_CASE("half, bfloat16 and Q8_0 encodings follow IEEE 754 and ggml", "[gguf]") {
  CHECK(quant::half_to_float(0x3C00) == 1.0f);
  CHECK(quant::half_to_float(0xC000) == -2.0f);
  CHECK(quant::half_to_float(0x7BFF) == 65504.0f);
  CHECK(quant::half_to_float(0x0400) == std::ldexp(1.0f, -14));  // smallest normal
  CHECK(quant::half_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(quant::half_to_float(0x03FF) == std::ldexp(1023.0f, -24));
  CHECK(std::signbit(quant::half_to_float(0x8000)));
  CHECK(std::isinf(quant::half_to_float(0xFC00)));
  CHECK(std::isnan(quant::half_to_float(0x7E00)));

  CHECK(quant::float_to_half(1.0f) == 0x3C00);
  CHECK(quant::float_to_half(0.1f) == 0x2E66);
  CHECK(quant::float_to_half(1.0f / 3.0f) == 0x3555);
  CHECK(quant::float_to_half(65519.0f) == 0x7BFF);
  CHECK(quant::float_to_half(65520.0f) == 0x7C00);  // the halfway point rounds to even: infinity
  CHECK(quant::float_to_half(-1e9f) == 0xFC00);
  CHECK(quant::float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);      // tie, to even
  CHECK(quant::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);  // tie, to even
  CHECK(quant::float_to_half(std::ldexp(1.0f, -25)) == 0x0000);             // tie between 0 and 1 subnormal
  CHECK(quant::float_to_half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);
  CHECK(quant::float_to_half(3 * std::ldexp(1.0f, -25)) == 0x0002);
  CHECK(quant::float_to_half(std::ldexp(1023.5f, -24)) == 0x0400);  // a subnormal rounding up into the normals
  CHECK(quant::float_to_half(1e-8f) == 0x0000);
  uint16_t nan16 = quant::float_to_half(std::nanf(""));
  CHECK(((nan16 & 0x7C00) == 0x7C00 && (nan16 & 0x3FF) != 0));
  for (uint32_t h = 0; h < 0x10000; ++h) {  // every non-NaN half survives a round trip
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue;
    REQUIRE(quant::float_to_half(quant::half_to_float(static_cast<uint16_t>(h))) == h);
  }

  CHECK(quant::float_to_bf16(1.0f) == 0x3F80);
  CHECK(quant::bf16_to_float(0x3F80) == 1.0f);
  CHECK(quant::bf16_to_float(0xC0490FDB >> 16) == -3.140625f);
  CHECK(quant::float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3F80);
  CHECK(quant::float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3F82);
  CHECK(std::isnan(quant::bf16_to_float(quant::float_to_bf16(std::nanf("")))));
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7F80) == 0x7F80 && (h & 0x7F)) continue;
    REQUIRE(quant::float_to_bf16(quant::bf16_to_float(static_cast<uint16_t>(h))) == h);
  }

  // One Q8_0 block: d = amax/127 as fp16, q = round(x/d).
  float x[64];
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
  for (int j = 32; j < 64; ++j) x[j] = 0.0f;  // an all-zero block must not produce NaN
  std::vector<uint8_t> q(quant::row_bytes(GgmlType::Q8_0, 64));
  quant::quantize_row(GgmlType::Q8_0, x, q.data(), 64);
  REQUIRE(q.size() == 68);
  uint16_t d16;
  std::memcpy(&d16, q.data(), 2);
  CHECK(d16 == quant::float_to_half(16.0f / 127.0f));
  CHECK(static_cast<int8_t>(q[2]) == -127);
  CHECK(static_cast<int8_t>(q[2 + 31]) == 119);  // 15 * 127/16 = 119.06
  CHECK(static_cast<int8_t>(q[2 + 24]) == 64);   // 8 * 127/16 = 63.5 rounds away from zero
  float y[64];
  quant::dequantize_row(GgmlType::Q8_0, q.data(), y, 64);
  CHECK(y[31] == 119.0f * quant::half_to_float(d16));
  CHECK(y[0] == -127.0f * quant::half_to_float(d16));
  for (int j = 32; j < 64; ++j) CHECK(y[j] == 0.0f);
  CHECK_THROWS_WITH(quant::quantize_row(GgmlType::Q8_0, x, q.data(), 40), Catch::Contains("multiple of 32"));
}

TEST_CASE("F16, BF16 and Q8_0 files round-trip within the format's precision", "[gguf]") {
  TempDir tmp;
  const ModelFile src = load_model_file(kBin);
  for (GgmlType dtype : {GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0}) {
    const std::string name = quant::traits(dtype).name;
    INFO(name);
    const std::string path = tmp / ("m_" + name + ".gguf");
    write_model_gguf(src, path, dtype);
    GgufFile f(path);
    CHECK(f.get_int("general.file_type") == (dtype == GgmlType::F16 ? 1 : dtype == GgmlType::BF16 ? 32 : 7));
    const ModelFile back = load_model_file(path);
    require_same_config(back.config, src.config);

    auto a = tensors_of(src), b = tensors_of(back);
    double worst = 0.0;  // the largest error as a fraction of its bound
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].second.empty()) continue;
      const std::string& name = a[i].first;
      INFO(name);
      const GgufTensorInfo& t = f.tensor(name);
      const std::vector<float>&x = a[i].second, &y = b[i].second;
      REQUIRE(x.size() == y.size());
      GgmlType want = t.ne.size() == 1 ? GgmlType::F32 : dtype;
      if (want == GgmlType::Q8_0 && t.ne[0] % 32 != 0) want = GgmlType::F16;  // ffn_down rows are 172 long
      REQUIRE(t.type == want);
      for (size_t j = 0; j < x.size(); ++j) {
        double bound = 0.0;  // the format's worst-case rounding error for this element
        if (t.type == GgmlType::F16) {
          bound =
              std::fabs(x[j]) >= std::ldexp(1.0, -14) ? std::fabs(x[j]) * std::ldexp(1.0, -11) : std::ldexp(1.0, -25);
        } else if (t.type == GgmlType::BF16) {
          bound = std::fabs(x[j]) * std::ldexp(1.0, -8);
        } else if (t.type == GgmlType::Q8_0) {
          size_t block = j / 32 * 32;
          float amax = 0.0f;
          for (size_t k = block; k < block + 32; ++k) amax = std::max(amax, std::fabs(x[k]));
          // Half a quantization step, plus the fp16 rounding of the scale times the largest |q|.
          bound = amax / 127.0 * (0.5 + 127.0 * std::ldexp(1.0, -11)) + 1e-9;
        }
        const double err = std::fabs(double(x[j]) - double(y[j]));
        if (bound == 0.0)
          REQUIRE(err == 0.0);
        else
          REQUIRE(err <= bound);
        if (bound > 0.0) worst = std::max(worst, err / bound);
      }
    }
    CHECK(worst > 0.1);  // the formats really are lossy: the bounds are not vacuous
  }
}

TEST_CASE("GgufWriter writes metadata of every type and aligned tensors", "[gguf]") {
  TempDir tmp;
  GgufWriter w;
  w.set("u8", GgufValue{uint8_t{200}});
  w.set("i8", GgufValue{int8_t{-100}});
  w.set("u16", GgufValue{uint16_t{60000}});
  w.set("i16", GgufValue{int16_t{-30000}});
  w.set_u32("u32", 4000000000u);
  w.set_i32("i32", -2000000000);
  w.set_f32("f32", 0.25f);
  w.set_bool("bool", true);
  w.set_string("string", "h\xC3\xA9llo");
  w.set("u64", GgufValue{uint64_t{1} << 60});
  w.set("i64", GgufValue{int64_t{-1} << 60});
  w.set("f64", GgufValue{3.5});
  w.set("strings", GgufValue::strings({"a", "", "ccc"}));
  w.set("empty", GgufValue::strings({}));
  w.set("nested", GgufValue{GgufArray{GgufType::Array, {GgufValue::int32s({1, 2}), GgufValue::int32s({})}}});
  w.set("general.alignment", GgufValue{uint32_t{64}});
  w.set_u32("u32", 7);  // replacing keeps the position
  CHECK_THROWS_WITH(w.set("bad", GgufValue{GgufArray{GgufType::Int32, {GgufValue{1.0f}}}}),
                    Catch::Contains("array of int32 holds an item of type float32"));

  const float data[6] = {1.0f, -2.0f, 0.5f, 3.0f, -0.0f, 65504.0f};
  w.add_tensor("a", {3}, GgmlType::F32, data);
  w.add_tensor("b", {3, 2}, GgmlType::F16, data);
  w.add_tensor("c", {2, 3}, GgmlType::BF16, data);
  std::vector<float> ramp(64);
  for (int i = 0; i < 64; ++i) ramp[i] = static_cast<float>(i) / 8.0f;
  w.add_tensor("d", {32, 2}, GgmlType::Q8_0, ramp.data());
  CHECK_THROWS_WITH(w.add_tensor("a", {3}, GgmlType::F32, data), Catch::Contains("added twice"));
  CHECK_THROWS_WITH(w.add_tensor("e", {6}, GgmlType::Q8_0, data), Catch::Contains("multiple of 32"));
  const std::string path = tmp / "all.gguf";
  w.write(path);

  GgufFile f(path);
  REQUIRE(f.metadata() == w.metadata());
  CHECK(f.metadata()[4].first == "u32");
  CHECK(f.alignment() == 64);
  CHECK(f.data_offset() % 64 == 0);
  CHECK(f.get_int("u8") == 200);
  CHECK(f.get_int("i64") == -(int64_t{1} << 60));
  CHECK(f.get_int("u32") == 7);
  CHECK(f.get_float("f64") == 3.5);
  CHECK(f.get_float("f32") == 0.25);
  CHECK(f.get_string("string") == "h\xC3\xA9llo");
  CHECK(f.get_string_array("strings") == std::vector<std::string>{"a", "", "ccc"});
  CHECK(f.get_array("nested").items.size() == 2);
  CHECK_THROWS_WITH(f.get_int("f32"), Catch::Contains("key 'f32' has type float32, expected an integer"));
  CHECK_THROWS_WITH(f.get_string("bool"), Catch::Contains("key 'bool' has type bool, expected a string"));
  CHECK_THROWS_WITH(f.get_float_array("strings"),
                    Catch::Contains("key 'strings' has type an array of string, expected an array of float32"));
  CHECK_THROWS_WITH(f.get_bool("nope"), Catch::Contains("GGUF file '" + path + "': missing key 'nope'"));

  REQUIRE(f.tensors().size() == 4);
  for (const auto& t : f.tensors()) {
    CHECK(t.offset % 64 == 0);
    CHECK(reinterpret_cast<uintptr_t>(t.data) % 64 == 0);
  }
  CHECK(f.dequantize(f.tensor("a")) == std::vector<float>{1.0f, -2.0f, 0.5f});
  CHECK(f.dequantize(f.tensor("b")) == std::vector<float>(data, data + 6));  // all exact in F16
  CHECK(f.dequantize(f.tensor("c")) == std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f, -0.0f, 65536.0f});
  std::vector<float> d = f.dequantize(f.tensor("d"));
  for (int i = 0; i < 64; ++i) CHECK(d[i] == Approx(ramp[i]).margin(ramp[i < 32 ? 31 : 63] / 127 * 0.57));
}

TEST_CASE("GgufWriter streams declared tensors, one produced at a time, and removes a file it could not finish",
          "[gguf]") {
  TempDir tmp;
  const float data[4] = {1.0f, -2.0f, 0.5f, 3.0f};
  GgufWriter w;
  w.add_tensor("given", {4}, GgmlType::F32, data);
  w.declare_tensor("made", {2, 2}, GgmlType::F16);
  w.declare_tensor("later", {4}, GgmlType::F32);
  CHECK_THROWS_WITH(w.declare_tensor("made", {4}, GgmlType::F32), Catch::Contains("added twice"));
  std::vector<size_t> asked;
  const std::string path = tmp / "streamed.gguf";
  w.write(path, [&](size_t i) {
    asked.push_back(i);
    return encode_tensor("t", {4}, i == 1 ? GgmlType::F16 : GgmlType::F32, data);
  });
  CHECK(asked == std::vector<size_t>{1, 2});  // in file order, never the tensor given as bytes
  GgufFile f(path);
  CHECK(f.dequantize(f.tensor("made")) == std::vector<float>(data, data + 4));
  CHECK(f.dequantize(f.tensor("later")) == std::vector<float>(data, data + 4));

  const std::string broken = tmp / "broken.gguf";
  CHECK_THROWS_WITH(w.write(broken), Catch::Contains("'made' was declared but nothing produces it"));
  CHECK_FALSE(std::filesystem::exists(broken));
  CHECK_THROWS_WITH(w.write(broken, [&](size_t) { return std::vector<uint8_t>(3); }),
                    Catch::Contains("'made': 3 bytes produced, its shape and type need 8"));
  CHECK_FALSE(std::filesystem::exists(broken));
}

TEST_CASE("encode_tensor on several threads writes the bytes of one pass", "[gguf]") {
  // 3 x 2^20 rows' worth of Q4_K: at least two slices on a machine with two cores.
  const std::vector<uint64_t> ne{256, 3 << 12};
  std::vector<float> values(ne[0] * ne[1]);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(float(i) * 0.37f) * float(1 + i % 7);
  const std::vector<uint8_t> bytes = encode_tensor("w", ne, GgmlType::Q4_K, values.data());
  std::vector<uint8_t> one(bytes.size());
  quant::quantize_chunk(GgmlType::Q4_K, values.data(), one.data(), 0, int64_t(ne[1]), int64_t(ne[0]));
  CHECK(bytes == one);
}

TEST_CASE("a drawn model writes each tensor from its own stream, in make_random_model's ranges", "[gguf]") {
  TempDir tmp;
  LlamaConfig cfg = tiny_arch_shape("gpt-oss").config;
  const TensorDraw draw = random_tensor_draw(cfg, 7);
  const std::string path = tmp / "drawn.gguf";
  size_t written = 0;
  write_drawn_gguf(random_model_outline(cfg, 7), path, FileType::F32, draw, [&](const TensorWritten&) { ++written; });
  GgufFile f(path);
  CHECK(written == f.tensors().size());
  for (const GgufTensorInfo& t : f.tensors())  // order-free
    CHECK(f.dequantize(t) == draw(t.name, t.ne, GgmlType::F32).to_f32());
  // The same draw again, and a different seed differs.
  const auto q = f.dequantize(f.tensor("blk.1.attn_q.weight"));
  CHECK(q == random_tensor_draw(cfg, 7)("blk.1.attn_q.weight", {64, 128}, GgmlType::F32).to_f32());
  CHECK(q != random_tensor_draw(cfg, 8)("blk.1.attn_q.weight", {64, 128}, GgmlType::F32).to_f32());
  const float bound = 1.0f / std::sqrt(64.0f);
  CHECK(*std::max_element(q.begin(), q.end()) < bound);
  CHECK(*std::max_element(q.begin(), q.end()) > 0.9f * bound);
  CHECK(f.dequantize(f.tensor("blk.0.attn_norm.weight")) == std::vector<float>(64, 1.0f));
  const auto up = f.dequantize(f.tensor("blk.0.ffn_up_exps.weight"));  // gpt-oss: 12x, so the clamp applies
  CHECK(*std::max_element(up.begin(), up.end()) > 0.9f * 12.0f * bound);
  // A tensor drawn in slices on every core is one sequential splitmix64 stream seeded by the seed and FNV-1a(name).
  const std::vector<uint64_t> ne{1 << 10, 1 << 13};
  const std::vector<float> big = draw("big", ne, GgmlType::F32).to_f32();
  uint64_t state = 0xcbf29ce484222325ull;
  for (char ch : std::string("big")) state = (state ^ uint8_t(ch)) * 0x100000001b3ull;
  state ^= 7;
  size_t mismatched = 0;
  for (size_t i = 0; i < big.size(); ++i) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const float want = (float(z >> 40) * (2.0f / 16777216.0f) - 1.0f) * (1.0f / 32.0f);
    mismatched += big[i] != want;
  }
  CHECK(mismatched == 0);
  // The model loads.
  ModelFile m = load_model_file(path);
  CHECK(m.config.moe.n_experts == 8);
  CHECK(m.config.attn_sinks);
}

TEST_CASE("a drawn quantized tensor is made of ggml-encoded random blocks in the matrix's range", "[gguf]") {
  const TensorDraw draw = random_tensor_draw(tiny_arch_shape("qwen3moe").config, 3);
  const std::vector<uint64_t> ne{512, 64, 16};
  const WeightMatrix w = draw("blk.0.ffn_up_exps.weight", ne, GgmlType::Q4_K);
  REQUIRE(w.type() == GgmlType::Q4_K);
  CHECK(w.blocks() == draw("blk.0.ffn_up_exps.weight", ne, GgmlType::Q4_K).blocks());
  CHECK(w.blocks() != draw("blk.0.ffn_gate_exps.weight", ne, GgmlType::Q4_K).blocks());
  // The pool is random values of this range encoded by ggml's rounding, so the blocks decode within it.
  const std::vector<float> values = w.to_f32();
  const float bound = 1.0f / std::sqrt(512.0f);
  float top = 0;
  for (float v : values) top = std::max(top, std::abs(v));
  CHECK(top <= bound * 1.1f);  // 6-bit sub-block scales round up by a few percent
  CHECK(top > bound * 0.9f);
  std::set<std::vector<uint8_t>> distinct;
  for (size_t b = 0; b < w.blocks().size(); b += 144)
    distinct.emplace(w.blocks().begin() + b, w.blocks().begin() + b + 144);
  CHECK(distinct.size() > 500);  // of 512 blocks drawn from 65,536
}
