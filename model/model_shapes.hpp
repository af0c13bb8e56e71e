// Model shapes for `parley gen-model`: a tiny one per architecture that exercises each of its features, and the
// real shapes of popular models for benchmarks.
#pragma once
#include <string>
#include <string_view>

#include "model/llama_config.hpp"

namespace parley {

struct ModelShape {
  LlamaConfig config;
  bool rope_factors = false;  // draw RoPE frequency factors (Llama 3.1's rope_freqs, Phi-3's long factors)
};

// --arch: llama (rope_freqs, head size != dim / heads, untied head), qwen2 (Q/K/V biases), qwen3 (QK-norm),
// gemma2 (soft-capping, sliding windows of 12 on every other layer), gemma3 (5 local layers of window 8 to one
// global, linear RoPE scaling on the global one), phi3 (fused tensors, partial rotary, LongRoPE past a context of
// 32), qwen3moe (top 3 of 8 experts, renormalized; YaRN x4 past 64), qwen2moe (top 2 of 8 and a gated shared expert),
// mixtral (a llama with top 2 of 4 experts), gpt-oss (sinks, biases, windows of 12 on every other layer, YaRN x4 past
// 64, top 2 of 8 experts with the clamped SwiGLU). Throws std::invalid_argument naming the known ones.
ModelShape tiny_arch_shape(std::string_view arch);
std::string known_tiny_archs();

// --shape: builtin, 110m, llama3.2-1b, qwen2.5-0.5b, qwen3-0.6b, gemma3-1b, phi3-mini, smollm2-135m,
// qwen3-30b-a3b, gpt-oss-20b, moe-small (qwen3moe's experts, narrower and shallower), moe-256 (tiny-256's rule
// with 8 experts).
ModelShape named_shape(std::string_view name);
std::string known_shapes();

}  // namespace parley
