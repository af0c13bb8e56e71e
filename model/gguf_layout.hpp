// llama.cpp's tensor layout: a GGUF's tensors read into the weights of the config's architecture.
#pragma once
#include "model/gguf.hpp"
#include "model/llama_weights.hpp"

namespace parley {

// Every tensor the layout names, checked for its shape (matrices stay in the file's type); a tensor the layout does
// not name is refused, as ignoring it would silently change the output. Sets config.tied_output.
LlamaWeights read_gguf_weights(const GgufFile& f, LlamaConfig& config);

}  // namespace parley
