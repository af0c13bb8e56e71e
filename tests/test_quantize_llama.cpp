// `parley quantize` against llama.cpp's own llama_model_quantize: node-llama-cpp's prebuilt libllama.so
// (tests/e2e/install.sh fetches it), loaded with dlopen. From the same F32 (or quantized) GGUF both must write
// every tensor in the same type with the same bytes, and the same general.file_type.
#include <dlfcn.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "model/convert.hpp"
#include "model/gguf.hpp"
#include "model/model_shapes.hpp"
#include "model/random_model.hpp"

using namespace parley;

namespace {

// struct llama_model_quantize_params as include/llama.h of the bundled llama.cpp declares it (64 bytes).
struct QuantizeParamsAbi {
  int32_t nthread;
  int32_t ftype;                 // enum llama_ftype
  int32_t output_tensor_type;    // enum ggml_type; GGML_TYPE_COUNT: the recipe's
  int32_t token_embedding_type;  // likewise
  bool allow_requantize, quantize_output_tensor, only_copy, pure, keep_split, dry_run;
  const void* imatrix;
  const void* kv_overrides;
  const void* tt_overrides;
  const int32_t* prune_layers;
  size_t max_buf_size;
};
static_assert(sizeof(QuantizeParamsAbi) == 64);

struct Llama {
  QuantizeParamsAbi (*default_params)();
  uint32_t (*quantize)(const char* in, const char* out, const QuantizeParamsAbi* params);
  std::string error;  // why it did not load
};

const Llama& llama() {
  static const Llama loaded = [] {
    Llama l{};
    void* lib = dlopen(PARLEY_LLAMA_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      l.error = std::string("cannot load ") + PARLEY_LLAMA_LIB + " (" + dlerror() +
                "): run tests/e2e/install.sh to fetch node-llama-cpp's prebuilt llama.cpp";
      return l;
    }
    using LogCallback = void (*)(int level, const char* text, void* user_data);
    auto log_set = reinterpret_cast<void (*)(LogCallback, void*)>(dlsym(lib, "llama_log_set"));
    if (log_set) log_set([](int, const char*, void*) {}, nullptr);  // quiet: one line per tensor otherwise
    l.default_params = reinterpret_cast<decltype(l.default_params)>(dlsym(lib, "llama_model_quantize_default_params"));
    l.quantize = reinterpret_cast<decltype(l.quantize)>(dlsym(lib, "llama_model_quantize"));
    if (!l.default_params || !l.quantize)
      l.error = std::string("llama_model_quantize missing from ") + PARLEY_LLAMA_LIB;
    return l;
  }();
  if (!loaded.error.empty()) FAIL(loaded.error);
  return loaded;
}

// llama-quantize IN OUT TYPE, on all cores (its threads split tensors into chunks of rows).
void llama_quantize(const std::string& in, const std::string& out, FileType type) {
  QuantizeParamsAbi p = llama().default_params();
  REQUIRE(p.output_tensor_type == p.token_embedding_type);  // GGML_TYPE_COUNT: no override; guards the layout
  REQUIRE(p.quantize_output_tensor);
  p.ftype = static_cast<int32_t>(type);
  p.allow_requantize = true;
  REQUIRE(llama().quantize(in.c_str(), out.c_str(), &p) == 0);
}

struct TempDir {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("parley-quantize-" + std::to_string(getpid()));
  TempDir() { std::filesystem::create_directories(dir); }
  ~TempDir() { std::filesystem::remove_all(dir); }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

constexpr FileType kAllTypes[] = {FileType::Q4_0,   FileType::Q4_1,   FileType::Q5_0,   FileType::Q5_1,
                                  FileType::Q8_0,   FileType::Q4_K_S, FileType::Q4_K_M, FileType::Q5_K_S,
                                  FileType::Q5_K_M, FileType::Q6_K,   FileType::F16,    FileType::BF16,
                                  FileType::F32};

// Every tensor of ours against llama.cpp's, by name (llama.cpp orders them by block, then name).
void require_same_tensors(const std::string& ours_path, const std::string& theirs_path) {
  const GgufFile ours(ours_path), theirs(theirs_path);
  CHECK(ours.get_int("general.file_type") == theirs.get_int("general.file_type"));
  REQUIRE(ours.tensors().size() == theirs.tensors().size());
  for (const GgufTensorInfo& t : theirs.tensors()) {
    INFO(t.name << " llama.cpp: " << quant::traits(t.type).name);
    const GgufTensorInfo* mine = ours.find_tensor(t.name);
    REQUIRE(mine);
    CHECK(quant::traits(mine->type).name == std::string(quant::traits(t.type).name));
    CHECK(mine->ne == t.ne);
    REQUIRE(mine->nbytes == t.nbytes);
    CHECK(std::memcmp(mine->data, t.data, t.nbytes) == 0);
  }
}

// Writes m as F32, then quantizes it to each type both ways.
void compare_all_types(const ModelFile& m, const std::string& tag) {
  TempDir dir;
  const std::string f32 = dir / "f32.gguf";
  write_model_gguf(m, f32, FileType::F32);
  for (FileType type : kAllTypes) {
    const std::string name(file_type_name(type));
    INFO(tag << " " << name);
    const std::string ours = dir / ("ours-" + name + ".gguf"), theirs = dir / ("llama-" + name + ".gguf");
    llama_quantize(f32, theirs, type);
    quantize_model(f32, "", ours, type);
    require_same_tensors(ours, theirs);
  }
}

ModelFile tiny(const std::string& arch) {
  const ModelShape s = tiny_arch_shape(arch);
  return make_random_model(s.config, 11, false, std::nullopt, s.rope_factors);
}

// Rows of 256 and more (whole K-quant super-blocks) and 8 blocks, so that the mixes' layers differ.
ModelFile wide(const std::string& arch, int layers, int hidden) {
  ModelShape s = tiny_arch_shape(arch);
  s.config.dim = 256, s.config.hidden_dim = hidden, s.config.n_layers = layers;
  if (s.config.head_size > 0) s.config.head_size = 64;  // 4 heads of 64
  return make_random_model(s.config, 12, false, std::nullopt, s.rope_factors);
}

}  // namespace

TEST_CASE("parley quantize writes llama.cpp's types and bytes for every file type on the tiny models", "[quantize]") {
  for (const char* arch : {"llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"}) compare_all_types(tiny(arch), arch);
}

TEST_CASE("on rows of whole super-blocks and 8 layers, the mixes' per-layer choices are llama.cpp's", "[quantize]") {
  compare_all_types(wide("llama", 8, 512), "llama 8x256");  // untied output
  compare_all_types(wide("qwen3", 9, 768), "qwen3 9x256");  // tied: the embedding is the output head
  compare_all_types(wide("phi3", 8, 512), "phi3 8x256");    // fused attn_qkv counts as attn_v
}

TEST_CASE("rows that are no whole 32-element blocks fall back to f16 as llama.cpp's do", "[quantize]") {
  ModelShape s = tiny_arch_shape("qwen2");
  s.config.hidden_dim = 80;  // ffn_down rows of 80
  compare_all_types(make_random_model(s.config, 13), "qwen2 hidden 80");
}

TEST_CASE("requantizing a q8_0 or f16 file gives llama.cpp's bytes, copying what is already in place", "[quantize]") {
  TempDir dir;
  const std::string f32 = dir / "f32.gguf";
  write_model_gguf(wide("llama", 8, 512), f32, FileType::F32);
  for (FileType from : {FileType::Q8_0, FileType::F16, FileType::Q4_K_M}) {
    const std::string source = dir / ("from-" + std::string(file_type_name(from)) + ".gguf");
    llama_quantize(f32, source, from);  // llama.cpp's file as the input of both
    for (FileType to : {FileType::Q4_K_M, FileType::Q8_0, FileType::Q5_K_S, FileType::F16}) {
      INFO(file_type_name(from) << " -> " << file_type_name(to));
      const std::string ours = dir / "ours.gguf", theirs = dir / "theirs.gguf";
      llama_quantize(source, theirs, to);
      quantize_model(source, "", ours, to);
      require_same_tensors(ours, theirs);
    }
  }
}

TEST_CASE("an 80-layer Llama with GQA, llama.cpp's 70B, gets five-bit attn_v in q4_k_m and q4_k_s", "[quantize]") {
  TempDir dir;
  ModelShape s = tiny_arch_shape("llama");
  s.config.dim = 256, s.config.hidden_dim = 256, s.config.n_layers = 80, s.config.head_size = 64;
  const std::string f32 = dir / "f32.gguf";
  write_model_gguf(make_random_model(s.config, 14), f32, FileType::F32);
  for (FileType type : {FileType::Q4_K_M, FileType::Q4_K_S}) {
    INFO(file_type_name(type));
    const std::string ours = dir / "ours.gguf", theirs = dir / "theirs.gguf";
    llama_quantize(f32, theirs, type);
    quantize_model(f32, "", ours, type);
    require_same_tensors(ours, theirs);
    CHECK(GgufFile(ours).tensor("blk.40.attn_v.weight").type == GgmlType::Q5_K);
  }
}

TEST_CASE("stories260K from its llama2.c checkpoint equals llama.cpp's quantization of its GGUF", "[quantize]") {
  TempDir dir;
  const std::string models = std::string(PARLEY_SHARED_DIR) + "/models/";
  for (FileType type : {FileType::Q4_K_M, FileType::Q5_K_S, FileType::Q8_0, FileType::Q4_0}) {
    INFO(file_type_name(type));
    const std::string ours = dir / "ours.gguf", theirs = dir / "theirs.gguf";
    llama_quantize(models + "stories260K.gguf", theirs, type);  // llama.cpp's own converter wrote it
    quantize_model(models + "stories260K.bin", models + "tok512.bin", ours, type);
    require_same_tensors(ours, theirs);
  }
}
