// The `parley` subcommands as plain functions over option structs; main.cpp maps flags onto them,
// so CLI parsing (a heavy header) stays in one translation unit.
#pragma once
#include <cstdint>
#include <string>

#include "engine/offline_engine.hpp"
#include "engine/sampling_params.hpp"

namespace parley {

struct GenerateOptions {
  std::string model, tokenizer, prompt, isa = "auto";
  SamplingParams params;
  int threads = 0;
  bool show_ids = false;
  EngineOptions engine;
};
int run_generate(const GenerateOptions& o);

struct ConvertOptions {
  std::string checkpoint, tokenizer, out, dtype = "f32";
};
int run_convert(const ConvertOptions& o);

struct GenModelOptions {
  std::string shape = "110m", out, dtype = "f32";
  uint64_t seed = 1;
};
int run_gen_model(const GenModelOptions& o);

}  // namespace parley
