// Which ggml type each tensor of a model gets for a target file type: llama.cpp's `llama_tensor_get_type`
// (src/llama-quant.cpp) without an importance matrix or user overrides, for the architectures Parley writes
// (dense models, no experts). `general.file_type` is the target's llama_ftype number.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "model/gguf.hpp"
#include "model/llama_config.hpp"

namespace parley {

// llama.cpp's llama_ftype values, the ones Parley can produce.
enum class FileType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q8_0 = 7,
  Q3_K_M = 12,
  Q5_0 = 8,
  Q5_1 = 9,
  Q4_K_S = 14,
  Q4_K_M = 15,
  Q5_K_S = 16,
  Q5_K_M = 17,
  Q6_K = 18,
  IQ4_XS = 30,
  BF16 = 32,
  MXFP4_MOE = 38,  // experts (3-D tensors) in MXFP4, the rest Q8_0: gpt-oss's downloads
};

// llama-quantize's names: "q4_k_m", "f16", ... (lower case; parse_file_type ignores case).
std::string_view file_type_name(FileType t);
// The names parse_file_type accepts, comma separated, for help and error texts.
std::string file_type_names();
// Throws std::invalid_argument naming the valid types for an unknown name.
FileType parse_file_type(std::string_view name);
// The type most 2-D weights get (llama_ftype_get_default_type).
GgmlType default_tensor_type(FileType t);
// Whether the target quantizes (as ggml_is_quantized of its default type): f32, f16 and bf16 do not.
bool is_quantized(FileType t);

// What the recipe needs to know of the model.
struct RecipeModel {
  std::string arch;
  int n_blocks = 0;  // GGUF block_count: the layers plus an MTP block
  int n_layers = 0;  // the main layers alone (llama.cpp's model-size guess)
  int n_heads = 0, n_kv_heads = 0;
  bool has_output = true;  // an output.weight of its own; otherwise the embedding is the output and is treated so
  int n_experts = 0;       // llama.cpp gives an 8-expert model (Mixtral) more bits in attention
};
RecipeModel recipe_model(const LlamaConfig& c, bool has_mtp);

struct RecipeTensor {
  std::string_view name;         // GGUF name, e.g. "blk.3.attn_v.weight"
  std::span<const uint64_t> ne;  // GGUF order: ne[0] is the row length
  int layer = -1;                // the block index of a blk.N tensor
};

// N of a "blk.N." tensor name, -1 for a tensor outside the blocks.
int block_index(std::string_view name);

// The type llama.cpp's quantizer writes this tensor in, given a source tensor of F32 values.
GgmlType recipe_tensor_type(FileType target, const RecipeModel& model, const RecipeTensor& tensor);

}  // namespace parley
