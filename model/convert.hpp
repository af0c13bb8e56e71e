// Writing models as GGUF in the layout llama.cpp reads (as its llama2.c converter produces).
#pragma once
#include <string>

#include "model/gguf.hpp"
#include "model/model_file.hpp"

namespace parley {

// Writes m as a GGUF v3 "llama" model: llama.* hyperparameters, tokenizer.ggml.* when m.vocab is
// set, and tensors token_embd, blk.N.{attn_norm,attn_q,attn_k,attn_v,attn_output,ffn_norm,
// ffn_gate,ffn_down,ffn_up}, output_norm, output (only when untied). Norms are always F32; the
// 2-D weights use dtype, except that Q8_0 falls back to F16 for rows not a multiple of 32.
// A NeoX-rope model has its Q/K rows permuted to the Adjacent layout llama.cpp expects.
// Throws std::invalid_argument for an inconsistent model, std::runtime_error if it cannot write.
void write_model_gguf(const ModelFile& m, const std::string& path, GgmlType dtype);

// llama2.c checkpoint + tokenizer.bin -> GGUF (like llama.cpp's convert-llama2c-to-ggml).
void convert_llama2c(const std::string& checkpoint, const std::string& tokenizer_bin, const std::string& out,
                     GgmlType dtype);

}  // namespace parley
