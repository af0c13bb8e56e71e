// One engine built from its flags, in one place: the model file and its vocabulary, the CPU backend, the scheduler's
// config sized to the model and the KV cache, the device model (engine/device_setup.hpp on a GPU), then
// make_engine_parts' scheduler config and runner, with structured outputs and the step profile. The actor engine
// (actors/engine.cpp) spawns its actors over it; EngineCore (tests, benchmarks) is built by make_engine_parts too.
#pragma once
#include <memory>
#include <string>

#include "engine/engine_config.hpp"
#include "engine/engine_parts.hpp"
#include "kernels/cpu/ops.hpp"
#include "model/llama.hpp"
#include "model/model_file.hpp"
#include "model/tokenizer.hpp"

namespace parley {

struct LoadedEngine {
  // Loads and builds everything; throws std::invalid_argument for bad flags, std::runtime_error for a bad file.
  explicit LoadedEngine(const EngineConfig& config);
  LoadedEngine(const LoadedEngine&) = delete;  // the tokenizer and the model point into it
  LoadedEngine& operator=(const LoadedEngine&) = delete;

  ModelFile
      file;  // the served architecture (pooling resolved), chat template and vocabulary; no weights: on the device
  Tokenizer tokenizer;
  cpu::CpuBackend backend;            // the CPU model's threads and kernels
  std::string model_name;             // --served-model-name, else the model file's stem
  std::unique_ptr<LlamaModel> model;  // what the CPU device model computes with (null on a GPU)
  EngineParts parts;                  // the runner (the worker takes it) holds the device model and its KV cache
};

}  // namespace parley
