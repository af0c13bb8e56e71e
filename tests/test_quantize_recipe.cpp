// The quantization recipe (llama.cpp's per-tensor type choice) and `parley quantize`. The byte-for-byte
// comparison with llama.cpp itself is tests/test_quantize_llama.cpp (parley_quantize_tests).
#include <catch2/catch.hpp>
#include <array>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "model/convert.hpp"
#include "model/gguf.hpp"
#include "model/model_shapes.hpp"
#include "kernels/quant/quantize.hpp"
#include "model/quantize_recipe.hpp"
#include "model/random_model.hpp"
#include "test_support.hpp"

using namespace parley;
using parley::test::run_cli;
using parley::test::TempDir;

namespace {

RecipeModel dense(const std::string& arch, int layers, bool has_output = true) {
  return {arch, layers, layers, 8, 2, has_output};
}

std::string type_of(FileType target, const RecipeModel& m, const std::string& name, std::vector<uint64_t> ne) {
  return quant::traits(recipe_tensor_type(target, m, {name, ne, block_index(name)})).name;
}

// The type of blk.N.<suffix> in every block, space separated.
std::string per_layer(FileType target, const RecipeModel& m, const std::string& suffix, std::vector<uint64_t> ne) {
  std::string out;
  for (int l = 0; l < m.n_blocks; ++l)
    out += (l ? " " : "") + type_of(target, m, "blk." + std::to_string(l) + "." + suffix, ne);
  return out;
}

std::vector<uint8_t> tensor_bytes(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo& t = f.tensor(name);
  return {t.data, t.data + t.nbytes};
}

}  // namespace

TEST_CASE("file types carry llama.cpp's llama_ftype numbers and default tensor types", "[quantize]") {
  struct Row {
    const char* name;
    uint32_t ftype;
    GgmlType type;
  };
  const Row rows[] = {
      {"f32", 0, GgmlType::F32},       {"f16", 1, GgmlType::F16},          {"q4_0", 2, GgmlType::Q4_0},
      {"q4_1", 3, GgmlType::Q4_1},     {"q8_0", 7, GgmlType::Q8_0},        {"q5_0", 8, GgmlType::Q5_0},
      {"q5_1", 9, GgmlType::Q5_1},     {"q4_k_s", 14, GgmlType::Q4_K},     {"q4_k_m", 15, GgmlType::Q4_K},
      {"q5_k_s", 16, GgmlType::Q5_K},  {"q5_k_m", 17, GgmlType::Q5_K},     {"q6_k", 18, GgmlType::Q6_K},
      {"bf16", 32, GgmlType::BF16},    {"mxfp4_moe", 38, GgmlType::MXFP4}, {"q3_k_m", 12, GgmlType::Q3_K},
      {"iq4_xs", 30, GgmlType::IQ4_XS}};
  for (const Row& r : rows) {
    INFO(r.name);
    const FileType t = parse_file_type(r.name);
    CHECK(static_cast<uint32_t>(t) == r.ftype);
    CHECK(default_tensor_type(t) == r.type);
    CHECK(file_type_name(t) == r.name);
  }
  CHECK(parse_file_type("Q4_K_M") == FileType::Q4_K_M);  // llama-quantize ignores case
  CHECK(
      file_type_names() ==
      "q4_0, q4_1, q5_0, q5_1, q8_0, q3_k_m, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k, iq4_xs, mxfp4_moe, f16, bf16, f32");
}

TEST_CASE("mxfp4_moe: the experts in MXFP4, every other weight in Q8_0, the router and norms as they are",
          "[quantize]") {
  const RecipeModel m = dense("gpt-oss", 24);
  CHECK(type_of(FileType::MXFP4_MOE, m, "blk.3.ffn_gate_exps.weight", {2880, 2880, 32}) == std::string("mxfp4"));
  CHECK(type_of(FileType::MXFP4_MOE, m, "blk.3.ffn_down_exps.weight", {2880, 2880, 32}) == std::string("mxfp4"));
  CHECK(type_of(FileType::MXFP4_MOE, m, "blk.3.attn_q.weight", {2880, 4096}) == std::string("q8_0"));
  CHECK(type_of(FileType::MXFP4_MOE, m, "output.weight", {2880, 201088}) == std::string("q8_0"));
  CHECK(type_of(FileType::MXFP4_MOE, m, "token_embd.weight", {2880, 201088}) == std::string("q8_0"));
  CHECK(type_of(FileType::MXFP4_MOE, m, "blk.3.ffn_gate_inp.weight", {2880, 32}) == std::string("f32"));
  CHECK(type_of(FileType::Q4_K_M, m, "blk.3.ffn_gate_inp.weight", {2880, 32}) == std::string("f32"));
  CHECK(type_of(FileType::MXFP4_MOE, m, "blk.3.attn_sinks.weight", {64}) == std::string("f32"));
}

TEST_CASE("q3_k_m: llama.cpp's mix of Q3_K with Q4_K and Q5_K where more bits pay", "[quantize]") {
  const RecipeModel m = dense("qwen3moe", 48);
  CHECK(per_layer(FileType::Q3_K_M, dense("llama", 4), "attn_v.weight", {256, 64}) == "q5_K q5_K q4_K q4_K");
  CHECK(type_of(FileType::Q3_K_M, m, "blk.2.ffn_down_exps.weight", {768, 2048, 128}) == std::string("q5_K"));
  CHECK(type_of(FileType::Q3_K_M, m, "blk.3.ffn_down_exps.weight", {768, 2048, 128}) == std::string("q4_K"));
  CHECK(type_of(FileType::Q3_K_M, m, "blk.3.ffn_up_exps.weight", {2048, 768, 128}) == std::string("q3_K"));
  CHECK(type_of(FileType::Q3_K_M, m, "blk.3.attn_output.weight", {4096, 2048}) == std::string("q4_K"));
  CHECK(type_of(FileType::Q3_K_M, m, "blk.3.attn_q.weight", {2048, 4096}) == std::string("q3_K"));
  CHECK(type_of(FileType::Q3_K_M, m, "output.weight", {2048, 151936}) == std::string("q6_K"));
  CHECK(type_of(FileType::Q3_K_M, m, "blk.3.attn_q.weight", {2880, 4096}) == std::string("q4_0"));  // 2880 % 256
  RecipeModel mixtral = dense("llama", 32);
  mixtral.n_experts = 8;
  CHECK(type_of(FileType::Q3_K_M, mixtral, "blk.9.attn_v.weight", {4096, 1024}) == std::string("q8_0"));
  CHECK(type_of(FileType::Q3_K_M, mixtral, "blk.9.attn_k.weight", {4096, 1024}) == std::string("q8_0"));
  CHECK(type_of(FileType::Q3_K_M, mixtral, "blk.9.attn_output.weight", {4096, 4096}) == std::string("q5_K"));
}

TEST_CASE("iq4_xs: llama.cpp's mix without an importance matrix", "[quantize]") {
  const RecipeModel m = dense("qwen3moe", 48);  // 8 heads to 2 KV heads: GQA 4
  CHECK(type_of(FileType::IQ4_XS, m, "blk.7.attn_v.weight", {2048, 512}) == std::string("q5_K"));
  CHECK(type_of(FileType::IQ4_XS, m, "blk.5.ffn_down_exps.weight", {768, 2048, 128}) == std::string("q5_K"));
  CHECK(type_of(FileType::IQ4_XS, m, "blk.6.ffn_down_exps.weight", {768, 2048, 128}) == std::string("iq4_xs"));
  CHECK(type_of(FileType::IQ4_XS, m, "blk.6.ffn_up_exps.weight", {2048, 768, 128}) == std::string("iq4_xs"));
  CHECK(type_of(FileType::IQ4_XS, m, "output.weight", {2048, 151936}) == std::string("q6_K"));
  RecipeModel no_gqa = dense("llama", 16);
  no_gqa.n_kv_heads = 8;
  CHECK(type_of(FileType::IQ4_XS, no_gqa, "blk.7.attn_v.weight", {2048, 2048}) == std::string("iq4_xs"));
  CHECK_THROWS_WITH(type_of(FileType::IQ4_XS, m, "blk.7.attn_q.weight", {2880, 4096}),
                    Catch::Contains("iq4_xs: rows of 2880 are not whole 256-blocks"));
}

TEST_CASE("an unknown type name is refused with the list of valid names", "[quantize]") {
  REQUIRE_THROWS_WITH(parse_file_type("q3_k_s"),
                      "unknown type 'q3_k_s' (expected one of q4_0, q4_1, q5_0, q5_1, q8_0, q3_k_m, "
                      "q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k, iq4_xs, mxfp4_moe, f16, bf16, f32)");
  REQUIRE_THROWS_WITH(write_model_gguf(make_random_model(builtin_model_config(), 1), "/dev/null", GgmlType::Q4_K),
                      Catch::Contains("unsupported dtype q4_K"));
  const std::string out = run_cli("quantize --type q2_k /dev/null /tmp/never.gguf");
  CHECK_THAT(out, Catch::Contains("--type: unknown type 'q2_k' (expected one of q4_0,"));
}

TEST_CASE("q4_k_m and q5_k_m give attn_v and ffn_down six bits in the first, last and every third eighth",
          "[quantize]") {
  const RecipeModel m = dense("llama", 8);
  // use_more_bits(i, 8): i < 1, i >= 7, or (i - 1) % 3 == 2
  CHECK(per_layer(FileType::Q4_K_M, m, "attn_v.weight", {256, 256}) == "q6_K q4_K q4_K q6_K q4_K q4_K q6_K q6_K");
  CHECK(per_layer(FileType::Q4_K_M, m, "ffn_down.weight", {512, 256}) == "q6_K q4_K q4_K q6_K q4_K q4_K q6_K q6_K");
  CHECK(per_layer(FileType::Q5_K_M, m, "attn_v.weight", {256, 256}) == "q6_K q5_K q5_K q6_K q5_K q5_K q6_K q6_K");
  CHECK(per_layer(FileType::Q5_K_M, m, "ffn_down.weight", {512, 256}) == "q6_K q5_K q5_K q6_K q5_K q5_K q6_K q6_K");
  for (const char* other : {"attn_q.weight", "attn_k.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight"})
    CHECK(per_layer(FileType::Q4_K_M, m, other, {256, 256}) == "q4_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K");
  // 32 layers: 0-3, 28-31, and 6, 9, ..., 27
  const std::string l32 = per_layer(FileType::Q4_K_M, dense("qwen3", 32), "attn_v.weight", {256, 256});
  CHECK(l32 ==
        "q6_K q6_K q6_K q6_K q4_K q4_K q6_K q4_K q4_K q6_K q4_K q4_K q6_K q4_K q4_K q6_K "
        "q4_K q4_K q6_K q4_K q4_K q6_K q4_K q4_K q6_K q4_K q4_K q6_K q6_K q6_K q6_K q6_K");
}

TEST_CASE("q4_k_s gives the first four attn_v and the first eighth of ffn_down five bits", "[quantize]") {
  const RecipeModel m = dense("llama", 16);
  CHECK(per_layer(FileType::Q4_K_S, m, "attn_v.weight", {256, 256}) ==
        "q5_K q5_K q5_K q5_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K");
  CHECK(per_layer(FileType::Q4_K_S, m, "ffn_down.weight", {512, 256}) ==
        "q5_K q5_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K");
  CHECK(per_layer(FileType::Q5_K_S, m, "attn_v.weight", {256, 256}) ==
        "q5_K q5_K q5_K q5_K q5_K q5_K q5_K q5_K q5_K q5_K q5_K q5_K q5_K q5_K q5_K q5_K");
}

TEST_CASE("Phi-3's fused attn_qkv follows attn_v's rule, its fused ffn_up the default", "[quantize]") {
  const RecipeModel m = dense("phi3", 8);
  CHECK(per_layer(FileType::Q4_K_M, m, "attn_qkv.weight", {256, 768}) == "q6_K q4_K q4_K q6_K q4_K q4_K q6_K q6_K");
  CHECK(per_layer(FileType::Q4_K_S, m, "attn_qkv.weight", {256, 768}) == "q5_K q5_K q5_K q5_K q4_K q4_K q4_K q4_K");
  CHECK(per_layer(FileType::Q4_K_M, m, "ffn_up.weight", {256, 1024}) == "q4_K q4_K q4_K q4_K q4_K q4_K q4_K q4_K");
}

TEST_CASE("the output head takes q6_K, or q8_0 in q8_0 files and for rows not whole blocks", "[quantize]") {
  for (bool tied : {false, true}) {
    const RecipeModel m = dense("llama", 8, !tied);
    const std::string head = tied ? "token_embd.weight" : "output.weight";
    INFO(head);
    for (FileType t : {FileType::Q4_0, FileType::Q4_1, FileType::Q5_0, FileType::Q5_1, FileType::Q4_K_S,
                       FileType::Q4_K_M, FileType::Q5_K_S, FileType::Q5_K_M, FileType::Q6_K})
      CHECK(type_of(t, m, head, {256, 1000}) == std::string("q6_K"));
    CHECK(type_of(FileType::Q8_0, m, head, {256, 1000}) == std::string("q8_0"));
    CHECK(type_of(FileType::Q4_K_M, m, head, {64, 1000}) == std::string("q8_0"));  // 64 is no K-quant block
    CHECK(type_of(FileType::Q4_0, m, head, {64, 1000}) == std::string("q8_0"));    // q6_K, then its fallback
    CHECK(type_of(FileType::Q4_K_M, m, head, {80, 1000}) == std::string("f16"));   // nor is it 32-element blocks
    CHECK(type_of(FileType::F16, m, head, {80, 1000}) == std::string("f16"));
  }
  // An untied embedding is an ordinary weight.
  CHECK(type_of(FileType::Q4_K_M, dense("llama", 8), "token_embd.weight", {256, 1000}) == std::string("q4_K"));
  CHECK(type_of(FileType::Q4_0, dense("llama", 8), "token_embd.weight", {256, 1000}) == std::string("q4_0"));
}

TEST_CASE("rows not whole super-blocks fall back: q4_K to q5_0, q5_K to q5_1, q6_K to q8_0, else f16", "[quantize]") {
  const RecipeModel m = dense("qwen2", 8);
  CHECK(type_of(FileType::Q4_K_M, m, "blk.1.attn_q.weight", {64, 64}) == std::string("q5_0"));
  CHECK(type_of(FileType::Q4_K_M, m, "blk.0.attn_v.weight", {64, 64}) == std::string("q8_0"));  // q6_K first
  CHECK(type_of(FileType::Q5_K_S, m, "blk.1.attn_q.weight", {64, 64}) == std::string("q5_1"));
  CHECK(type_of(FileType::Q6_K, m, "blk.1.attn_q.weight", {64, 64}) == std::string("q8_0"));
  for (FileType t : {FileType::Q4_K_M, FileType::Q6_K, FileType::Q8_0, FileType::Q4_0, FileType::Q5_1})
    CHECK(type_of(t, m, "blk.1.ffn_down.weight", {80, 64}) == std::string("f16"));
  CHECK(type_of(FileType::Q4_0, m, "blk.1.attn_q.weight", {64, 64}) == std::string("q4_0"));
  // f16, bf16 and f32 files have neither mixes nor fallbacks.
  CHECK(type_of(FileType::BF16, m, "blk.1.ffn_down.weight", {80, 64}) == std::string("bf16"));
  CHECK(type_of(FileType::F32, m, "output.weight", {64, 64}) == std::string("f32"));
}

TEST_CASE("vectors stay f32 in every file type", "[quantize]") {
  const RecipeModel m = dense("qwen2", 8);
  for (FileType t : {FileType::Q4_K_M, FileType::Q8_0, FileType::F16, FileType::BF16})
    for (const char* name : {"blk.0.attn_norm.weight", "blk.0.attn_q.bias", "output_norm.weight", "rope_freqs.weight"})
      CHECK(type_of(t, m, name, {256}) == std::string("f32"));
}

TEST_CASE("a 70B Llama or Qwen2 gives q4_k_m's four-bit attn_v five bits", "[quantize]") {
  RecipeModel llama70 = dense("llama", 80);
  const std::string middle = "blk.20.attn_v.weight";  // not a use_more_bits layer of 80
  CHECK(type_of(FileType::Q4_K_M, llama70, middle, {8192, 1024}) == std::string("q5_K"));
  CHECK(type_of(FileType::Q4_K_S, llama70, middle, {8192, 1024}) == std::string("q5_K"));
  CHECK(type_of(FileType::Q5_K_M, llama70, middle, {8192, 1024}) == std::string("q5_K"));
  llama70.n_kv_heads = llama70.n_heads;  // llama.cpp calls that a 65B
  CHECK(type_of(FileType::Q4_K_M, llama70, middle, {8192, 8192}) == std::string("q4_K"));
  CHECK(type_of(FileType::Q4_K_M, dense("qwen2", 80), middle, {8192, 1024}) == std::string("q5_K"));
  CHECK(type_of(FileType::Q4_K_M, dense("qwen3", 80), middle, {8192, 1024}) == std::string("q4_K"));
  RecipeModel with_mtp = dense("llama", 80);
  with_mtp.n_blocks = 81;  // an MTP block makes 81 blocks but the model is still 80 layers
  CHECK(type_of(FileType::Q4_K_M, with_mtp, middle, {8192, 1024}) == std::string("q5_K"));
}

TEST_CASE("an MTP block counts among the blocks whose eighths the recipe takes", "[quantize]") {
  LlamaConfig c = builtin_model_config();
  c.n_layers = 7;
  const RecipeModel m = recipe_model(c, true);
  CHECK(m.n_blocks == 8);
  CHECK(m.n_layers == 7);
  CHECK(per_layer(FileType::Q4_K_M, m, "attn_v.weight", {256, 256}) == "q6_K q4_K q4_K q6_K q4_K q4_K q6_K q6_K");
}

TEST_CASE("write_model_gguf writes every tensor in the recipe's type with llama.cpp's file type", "[quantize]") {
  TempDir dir;
  const ModelShape shape = tiny_arch_shape("llama");
  const ModelFile m = make_random_model(shape.config, 3, false, std::nullopt, shape.rope_factors);
  const std::string path = dir / "q4km.gguf";
  size_t seen = 0;
  write_model_gguf(m, path, FileType::Q4_K_M, [&](const TensorWritten& t) {
    CHECK(t.index == seen++);
    CHECK(!t.copied);  // from F32
  });
  const GgufFile f(path);
  CHECK(seen == f.tensors().size());
  CHECK(f.get_int("general.file_type") == 15);
  CHECK(f.get_int("general.quantization_version") == 2);
  const RecipeModel rm = recipe_model(m.config, false);
  for (const GgufTensorInfo& t : f.tensors()) {
    INFO(t.name);
    CHECK(t.type == recipe_tensor_type(FileType::Q4_K_M, rm, {t.name, t.ne, block_index(t.name)}));
  }
  CHECK(f.tensor("blk.2.attn_v.weight").type == GgmlType::Q8_0);  // q6_K (layer 2 of 3), rows of 64
  CHECK(f.tensor("blk.0.attn_v.weight").type == GgmlType::Q5_0);
  CHECK(f.tensor("output.weight").type == GgmlType::Q8_0);
  write_model_gguf(m, dir / "f32.gguf", GgmlType::F32);
  CHECK_FALSE(GgufFile(dir / "f32.gguf").has("general.quantization_version"));
}

TEST_CASE("quantize requantizes a quantized model from its decoded values, and copies tensors of the same type",
          "[quantize]") {
  TempDir dir;
  for (const char* arch : {"qwen3", "phi3"}) {  // phi3: fused tensors built from blocks
    INFO(arch);
    const ModelShape shape = tiny_arch_shape(arch);
    const std::string q8 = dir / (std::string(arch) + "_q8.gguf"), again = dir / "again.gguf", q4 = dir / "q4.gguf";
    write_model_gguf(make_random_model(shape.config, 5, false, std::nullopt, shape.rope_factors), q8, FileType::Q8_0);
    size_t copied = 0;
    quantize_model(q8, "", again, FileType::Q8_0, [&](const TensorWritten& t) { copied += t.copied; });
    quantize_model(q8, "", q4, FileType::Q4_K_M);
    const GgufFile src(q8), same(again), requantized(q4);
    size_t matrices = 0;
    for (const GgufTensorInfo& t : src.tensors()) {
      INFO(t.name);
      matrices += t.type == GgmlType::Q8_0;
      CHECK(tensor_bytes(same, t.name) == tensor_bytes(src, t.name));
      const GgufTensorInfo& r = requantized.tensor(t.name);
      const std::vector<float> decoded = src.dequantize(t);
      std::vector<uint8_t> want(r.nbytes);
      const int64_t row = int64_t(t.ne[0]);
      quant::quantize_chunk(r.type, decoded.data(), want.data(), 0, int64_t(decoded.size()) / row, row);
      CHECK(tensor_bytes(requantized, t.name) == want);
    }
    CHECK(matrices > 0);
    CHECK(copied == matrices);
  }
}

TEST_CASE("a model with a tensor type Parley cannot decode is refused, naming the tensor", "[quantize]") {
  TempDir dir;
  const std::string path = dir / "iq3s.gguf";
  write_model_gguf(make_random_model(builtin_model_config(), 1), path, GgmlType::F32);
  // Turn blk.1.attn_q.weight's type id into iq3_s (21): it follows the name, the dimension count and 2 sizes.
  std::string bytes((std::istreambuf_iterator<char>(std::ifstream(path, std::ios::binary).rdbuf())), {});
  const std::string name = "blk.1.attn_q.weight";
  const size_t at = bytes.find(name) + name.size() + 4 + 2 * 8;
  const uint32_t iq3_s = 21;
  std::memcpy(&bytes[at], &iq3_s, 4);
  std::ofstream(path, std::ios::binary) << bytes;
  REQUIRE_THROWS_WITH(quantize_model(path, "", dir / "out.gguf", FileType::Q4_K_M),
                      Catch::Contains("blk.1.attn_q.weight") && Catch::Contains("iq3_s"));
  CHECK_THAT(run_cli("quantize --type q4_k_m " + path + " " + (dir / "out.gguf")),
             Catch::Contains("parley: error:") && Catch::Contains("blk.1.attn_q.weight"));
}

TEST_CASE("parley quantize prints each tensor's type and a summary, and gen-model --dtype applies the recipe",
          "[quantize]") {
  TempDir dir;
  const std::string f32 = dir / "f32.gguf", q4 = dir / "q4.gguf", gen = dir / "gen.gguf";
  REQUIRE_THAT(run_cli("gen-model --arch gemma3 --dtype f32 --out " + f32), Catch::Contains("wrote"));
  const std::string out = run_cli("quantize --type q4_k_m " + f32 + " " + q4);
  CHECK_THAT(out, Catch::Contains("[  1/") && Catch::Contains("token_embd.weight") &&
                      Catch::Contains("f32 -> q8_0"));  // the tied embedding is the output head: q6_K, rows of 64
  CHECK_THAT(out, Catch::Contains("quantized " + f32) && Catch::Contains("q4_k_m) in "));
  REQUIRE_THAT(run_cli("gen-model --arch gemma3 --dtype q4_k_m --out " + gen),
               Catch::Contains("generating gemma3") && Catch::Contains("[  1/") && Catch::Contains("f32 -> q5_0") &&
                   Catch::Contains("wrote"));
  const GgufFile a(q4), b(gen);
  CHECK(a.get_int("general.file_type") == 15);
  REQUIRE(a.tensors().size() == b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    INFO(a.tensors()[i].name);
    CHECK(a.tensors()[i].type == b.tensors()[i].type);
    CHECK(tensor_bytes(a, a.tensors()[i].name) == tensor_bytes(b, b.tensors()[i].name));
  }
}
