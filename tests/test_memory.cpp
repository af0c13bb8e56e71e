// Resident memory of a loaded quantized model: the file's bytes once (a tied
// head and the embedding share one packed copy; packing keeps the file's
// sizes), the KV cache, and no more than 10% besides.
#include <catch2/catch.hpp>
#include <malloc.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "model/convert.hpp"
#include "model/llama.hpp"
#include "model/model_shapes.hpp"
#include "model/quantize_recipe.hpp"
#include "model/random_model.hpp"
#include "test_support.hpp"

namespace parley {
namespace {

// VmRSS of this process, in bytes.
size_t resident_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

// A Llama of about 34M parameters with its head tied to a 16384 x 512 embedding
// (a quarter of the weights).
LlamaConfig tied_config() {
  LlamaConfig c = tiny_arch_shape("llama").config;
  c.dim = 512, c.hidden_dim = 1536, c.n_layers = 8, c.n_heads = 8, c.n_kv_heads = 4, c.vocab_size = 16384;
  c.max_seq_len = 512, c.tied_output = true;
  return c;
}

}  // namespace

TEST_CASE(
    "A loaded Q8_0 or Q4_K_M model with a tied head holds at most its "
    "file, its KV cache and 10% more",
    "[memory]") {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's allocator keeps freed memory in quarantine and its own shadow: RSS measures it, not us.
  WARN("resident memory is not measured under AddressSanitizer");
  return;
#endif
  const test::TempDir dir;
  for (const FileType type : {FileType::Q8_0, FileType::Q4_K_M}) {
    const std::string path = dir / (std::string(file_type_name(type)) + ".gguf");
    write_model_gguf(make_random_model(tied_config(), 11), path, type);
    malloc_trim(0);  // what writing it freed is not the load's
    const size_t file_bytes = std::filesystem::file_size(path);
    const size_t before = resident_bytes();
    {
      ModelFile file = load_model_file(path);
      const cpu::CpuBackend backend(1);
      LlamaModel model(file.config, std::move(file.weights), backend);
      KvCache kv(model.config(), 8, 16);  // 128 positions
      ForwardBatch batch;
      batch.token_ids = {1, 2, 3, 4}, batch.positions = {0, 1, 2, 3}, batch.token_seq = {0, 0, 0, 0};
      batch.slot_mapping = {0, 1, 2, 3}, batch.block_tables = {0}, batch.max_blocks_per_seq = 1,
      batch.logits_indices = {3};
      std::vector<float> logits;
      model.forward(batch, kv, logits);
      const size_t kv_bytes = size_t(kv.num_blocks()) * size_t(kv.bytes_per_block());
      const size_t grown = resident_bytes() - before;
      INFO(file_type_name(type) << ": resident +" << grown << " bytes; file " << file_bytes << ", KV " << kv_bytes
                                << ", weights " << model.weight_bytes());
      CHECK(double(model.weight_bytes()) <= 1.03 * double(file_bytes));
      CHECK(double(grown) <= 1.10 * double(file_bytes + kv_bytes));
    }
    malloc_trim(0);
  }
}

}  // namespace parley
