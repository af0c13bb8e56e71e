// The flags that choose one of a few words, parsed once (on the command line and in config files) into enums,
// so the engine compares enums and the names live in one place.
#pragma once
#include <array>
#include <stdexcept>
#include <string>
#include <string_view>

#include "engine/prefill_router.hpp"
#include "model/llama_config.hpp"

namespace parley {

enum class Role { Colocated, Prefill, Decode };  // --role: this instance's part in prefill/decode disaggregation
enum class KvTransport { Tcp, Nccl };            // --kv-transport: KV as bytes through the actors, or GPU to GPU
enum class DeviceKind { Cpu, Cuda };             // --device: where the model runs
enum class CpuAffinity { Auto, Off };            // --cpu-affinity: compute and actor threads on CPUs apart, or not
// --task (vLLM's): generate text, or serve embeddings; auto: embed when the file names a pooling type.
enum class EngineTask { Auto, Generate, Embed, Rerank };
// --dtype: the GEMM weights' type on a GPU; auto: float32 on the cpu (its only one), bfloat16 on cuda.
enum class WeightDtype { Auto, Float32, Bfloat16, Float16 };

template <class E>
struct Choices;  // each enum's flag and its names, in the enumerators' order
template <>
struct Choices<Role> {
  static constexpr std::string_view flag = "--role";
  static constexpr std::array<std::string_view, 3> names{"colocated", "prefill", "decode"};
};
template <>
struct Choices<KvTransport> {
  static constexpr std::string_view flag = "--kv-transport";
  static constexpr std::array<std::string_view, 2> names{"tcp", "nccl"};
};
template <>
struct Choices<DeviceKind> {
  static constexpr std::string_view flag = "--device";
  static constexpr std::array<std::string_view, 2> names{"cpu", "cuda"};
};

template <>
struct Choices<CpuAffinity> {
  static constexpr std::string_view flag = "--cpu-affinity";
  static constexpr std::array<std::string_view, 2> names{"auto", "off"};
};

template <>
struct Choices<EngineTask> {
  static constexpr std::string_view flag = "--task";
  static constexpr std::array<std::string_view, 4> names{"auto", "generate", "embed", "rerank"};
};
template <>
struct Choices<WeightDtype> {
  static constexpr std::string_view flag = "--dtype";
  static constexpr std::array<std::string_view, 4> names{"auto", "float32", "bfloat16", "float16"};
};
template <>
struct Choices<RoutingPolicy> {  // --prefill-routing, a decode instance's
  static constexpr std::string_view flag = "--prefill-routing";
  static constexpr std::array<std::string_view, 2> names{"round_robin", "least_loaded"};
};
template <>
struct Choices<PoolingType> {  // llama.cpp's names, in its enum's order (the file's values)
  static constexpr std::string_view flag = "--pooling";
  static constexpr std::array<std::string_view, 5> names{"none", "mean", "cls", "last", "rank"};
};

template <class E>
std::string name_of(E value) {
  return std::string(Choices<E>::names.at(size_t(value)));
}

// Throws std::invalid_argument naming the flag and every choice ("--device must be cpu or cuda, got 'tpu'").
template <class E>
E parse_choice(std::string_view given) {
  const auto& names = Choices<E>::names;
  std::string expected;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == given) return E(i);
    expected += std::string(i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + std::string(names[i]);
  }
  throw std::invalid_argument(std::string(Choices<E>::flag) + " must be " + expected + ", got '" + std::string(given) +
                              "'");
}

}  // namespace parley
