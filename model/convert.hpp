// Writing models as GGUF in the layout llama.cpp reads (as its llama2.c converter produces).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/gguf.hpp"
#include "model/model_file.hpp"
#include "model/quantize_recipe.hpp"

namespace parley {

// One tensor written: the index-th of count, its type in the model and in the file.
struct TensorWritten {
  size_t index, count;
  const std::string& name;
  const std::vector<uint64_t>& ne;
  GgmlType source, type;
  bool copied;  // the source's bytes, unchanged (it was in the chosen type already)
};
using TensorObserver = std::function<void(const TensorWritten&)>;

// Writes m as a GGUF v3 file of m.config.arch: its hyperparameters, tokenizer.ggml.* when m.vocab is set, and
// tensors token_embd, blk.N.{attn_norm,attn_q,attn_k,attn_v,attn_output,ffn_norm,ffn_gate,ffn_down,ffn_up}
// (fused attn_qkv and ffn_up for phi3), output_norm, output (only when untied). Each tensor takes the type
// llama.cpp's quantizer picks for `type` (model/quantize_recipe.hpp): norms and other vectors F32, 2-D weights
// the file type's mix. Quantized weights are decoded and re-encoded, or copied when already in the chosen type.
// A NeoX-rope model has its Q/K rows permuted to the Adjacent layout llama.cpp expects. observe, when set, sees
// each tensor as it is encoded. Throws std::invalid_argument for an inconsistent model, std::runtime_error if it
// cannot write.
void write_model_gguf(const ModelFile& m, const std::string& path, FileType type, const TensorObserver& observe = {});
// A tensor's values from its name, shape (GGUF order, ne[0] the row length) and the type the file gives it: in that
// type (its blocks are then copied as they are), or in F32 (and encoded).
using TensorDraw = std::function<WeightMatrix(const std::string& name, const std::vector<uint64_t>& ne, GgmlType type)>;
// As write_model_gguf, with every tensor's values drawn instead of taken from m's weights, which may be empty (m
// gives the config, vocabulary and layers' count): a model too large to hold in F32 is written one tensor at a time.
void write_drawn_gguf(const ModelFile& m, const std::string& path, FileType type, const TensorDraw& draw,
                      const TensorObserver& observe = {});
// The file type of one type: f32, f16, bf16 or q8_0 (which falls back to F16 for rows not a multiple of 32).
void write_model_gguf(const ModelFile& m, const std::string& path, GgmlType dtype);
// f32, f16, bf16 and q8_0 as file types; throws std::invalid_argument for another type.
FileType file_type_of(GgmlType dtype);

// `parley quantize`: the model at `in` (any file Parley loads; tokenizer as load_model_with_vocab takes it, for a
// llama2.c checkpoint) rewritten at `out` in `type`. Throws as loading and write_model_gguf do.
void quantize_model(const std::string& in, const std::string& tokenizer, const std::string& out, FileType type,
                    const TensorObserver& observe = {});

// llama2.c checkpoint + tokenizer.bin -> GGUF (like llama.cpp's convert-llama2c-to-ggml).
void convert_llama2c(const std::string& checkpoint, const std::string& tokenizer_bin, const std::string& out,
                     FileType type, const TensorObserver& observe = {});
inline void convert_llama2c(const std::string& checkpoint, const std::string& tokenizer_bin, const std::string& out,
                            GgmlType dtype) {
  convert_llama2c(checkpoint, tokenizer_bin, out, file_type_of(dtype));
}

}  // namespace parley
