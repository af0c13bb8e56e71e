// A tiny random model of one architecture (what `parley gen-model --arch` writes), loaded and ready.
#pragma once
#include <optional>
#include <string>

#include "differential_suite.hpp"
#include "engine/scheduler.hpp"
#include "kernels/cpu/ops.hpp"
#include "model/llama.hpp"
#include "model/model_shapes.hpp"
#include "model/random_model.hpp"

namespace parley::test {

inline const char* const kArchs[] = {"llama", "qwen2",    "qwen3",    "gemma2", "gemma3",
                                     "phi3",  "qwen3moe", "qwen2moe", "mixtral"};
// The architectures the CUDA backend runs (its host emulation is tested on each): all but gpt-oss.
inline const char* const kDeviceArchs[] = {"llama", "qwen2",    "qwen3",    "gemma2", "gemma3",
                                           "phi3",  "qwen3moe", "qwen2moe", "mixtral"};

inline ModelFile tiny_model(const std::string& arch) {
  const ModelShape s = tiny_arch_shape(arch);
  return make_random_model(s.config, 5, false, std::nullopt, s.rope_factors);
}

struct TinyArch {
  ModelFile file;
  cpu::CpuBackend backend{2};
  LlamaModel model;
  explicit TinyArch(const std::string& arch) : file(tiny_model(arch)), model(file.config, file.weights, backend) {}

  SchedulerConfig config(int num_kv_blocks, bool caching) const { return suite_config(file, num_kv_blocks, caching); }
};

}  // namespace parley::test
