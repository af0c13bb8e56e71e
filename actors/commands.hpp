// The `parley` subcommands as plain functions over option structs; main.cpp maps flags onto them,
// so CLI parsing (a heavy header) stays in one translation unit.
#pragma once
#include <cstdint>
#include <string>

#include "engine/engine_client.hpp"
#include "engine/engine_config.hpp"
#include "engine/sampling_params.hpp"
#include "http/server.hpp"
#include "model/quantize_recipe.hpp"

namespace parley {

struct GenerateOptions {
  std::string prompt;
  SamplingParams params;
  bool show_ids = false;
  EngineConfig engine;
};
int run_generate(const GenerateOptions& o);

struct EmbedOptions {
  std::string input = "-", output = "-";  // a file of lines to embed, one per line; JSON lines out ("-": stdin, stdout)
  int dimensions = 0;                     // > 0: the first values only (needs matryoshka)
  bool matryoshka = false;                // the model was trained for truncated vectors
  bool normalize = true;
  int truncate = 0;     // > 0: keep each input's last tokens; -1: the context's length; 0: over the context fails
  int in_flight = 256;  // inputs submitted at once (the scheduler batches them)
  EngineConfig engine;
};
int run_embed(const EmbedOptions& o);

struct ServeOptions {
  EngineConfig engine;
  http::ServerOptions server;
  std::string log_level = "info";
};
int run_serve(const ServeOptions& o);

struct AdminOptions {
  std::string url = "http://127.0.0.1:8000", token;
  bool once = false, json = false;  // --once: one snapshot to stdout and exit (--json: indented)
  double interval_s = 1.0;          // the console's refresh
};
int run_admin(const AdminOptions& o);

struct ConvertOptions {
  std::string checkpoint, tokenizer, out;
  FileType dtype = FileType::F32;
};
int run_convert(const ConvertOptions& o);

struct GenModelOptions {
  std::string shape = "110m", out;
  FileType dtype = FileType::F32;
  std::string arch;  // --arch ARCH: a tiny model exercising every feature of the architecture (instead of --shape)
  uint64_t seed = 1;
  bool with_mtp = false;               // --mtp: add a multi-token-prediction head
  std::optional<PoolingType> pooling;  // --pooling: write {arch}.pooling_type (an embedding model)
  std::string
      hf_tokenizer;  // --hf-tokenizer DIR: a Hugging Face tokenizer.json vocabulary instead of the synthetic one
  std::string pre;   // --pre NAME: its pre-tokenizer type when it is not recognised
};
int run_gen_model(const GenModelOptions& o);

struct QuantizeOptions {
  std::string in, out;
  FileType type = FileType::Q8_0;
  std::string tokenizer;  // --tokenizer: a llama2.c checkpoint's tokenizer.bin (or a GGUF vocabulary)
};
int run_quantize(const QuantizeOptions& o);

}  // namespace parley
