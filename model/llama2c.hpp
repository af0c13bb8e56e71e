// llama2.c checkpoints (Karpathy's run.c "legacy" format): a 7 x int32 header, then F32 weights.
#pragma once
#include <string>

#include "model/model_file.hpp"

namespace parley {

// Reads the header and weights in run.c's order. A negative vocab_size in the header means the
// file ends with a separate classifier (tied_output = false). The rotary tables
// (freq_cis_real/imag) are skipped. RoPE layout is Adjacent, rope_theta 10000, norm_eps 1e-5.
// ModelFile::name is the file name without its extension; vocab is left empty.
// Throws std::runtime_error "llama2.c checkpoint '<path>': <problem>" for a short or bad file.
ModelFile read_llama2c_checkpoint(const std::string& path);

}  // namespace parley
