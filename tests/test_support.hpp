// Shared test fixtures: paths into ../shared, the greedy reference, a temp dir, a runner for the engine.
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/offline_engine.hpp"
#include "kernels/cpu/ops.hpp"
#include "model/model_source.hpp"
#include "tests/test_paths.hpp"

namespace parley::test {

// The parley binary's output (stdout and stderr) for these arguments.
inline std::string run_cli(const std::string& args) {
  const std::string cmd = parley_binary() + " " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe.get())) out.append(buf.data(), n);
  return out;
}

// What f throws, or "no error": for tests that compare a whole message.
inline std::string error_of(auto&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

// ../shared/models/NAME.
inline std::string shared_model(const std::string& name) { return shared_dir() + "/models/" + name; }

struct Reference {
  std::string prompt, text;
  std::vector<int> prompt_ids, output_ids;
};

inline std::vector<Reference> greedy_references() {
  std::ifstream in(shared_model("stories260K_greedy_reference.json"));
  const auto j = nlohmann::json::parse(in);
  std::vector<Reference> out;
  for (const auto& r : j.at("references"))
    out.push_back({r.at("prompt"), r.at("text"), r.at("prompt_token_ids"), r.at("output_token_ids")});
  return out;
}

// n normal floats (mean 0, deviation scale) from seed: random kernel inputs.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Floats as the bytes an F32 cache's export_blocks holds.
inline std::vector<uint8_t> kv_bytes_of(const std::vector<float>& floats) {
  std::vector<uint8_t> bytes(floats.size() * 4);
  std::memcpy(bytes.data(), floats.data(), bytes.size());
  return bytes;
}

// A fresh directory under the system temp dir, removed when the object dies.
struct TempDir {
  std::filesystem::path dir;
  TempDir() {
    static int counter = 0;
    dir = std::filesystem::temp_directory_path() /
          ("parley-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(dir);
  }
  ~TempDir() { std::filesystem::remove_all(dir); }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

// A model loaded and ready, with a backend of its own.
struct Loaded {
  ModelFile file;
  cpu::CpuBackend backend;
  LlamaModel model;
  Loaded(const std::string& model_path, const std::string& tokenizer_path, int threads = 2)
      : file(load_model_with_vocab(model_path, tokenizer_path)),
        backend(threads),
        model(file.config, file.weights, backend) {}
  EngineOptions engine_options() const {
    EngineOptions o;
    o.stop_token_ids = default_stop_token_ids(*file.vocab);
    return o;
  }
};

}  // namespace parley::test
