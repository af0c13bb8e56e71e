// How RoPE pairs the dimensions of a head: a kernel argument, so it lives with the kernels.
#pragma once

namespace parley {

enum class RopeLayout {
  Adjacent,  // pairs (2i, 2i+1): llama2.c, llama.cpp's LLAMA_ROPE_TYPE_NORM
  NeoX,      // pairs (i, i + rot_dims/2): GPT-NeoX, HF Llama, Qwen2
};

}  // namespace parley
