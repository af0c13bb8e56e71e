// Offline decode and prefill throughput of Parley's forward pass, with llama.cpp measured on the same
// GGUF in the same run (bench/peer/llama_peer.mjs through node-llama-cpp) and the ratio.
// Usage: bench_decode --model M.gguf [--threads T] [--seqs 1,8,32] [--prompt-tokens P] [--gen-tokens G]
//                     [--rounds R] [--kv-cache-dtype f32|f16|bf16] [--peer]
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "engine/sampler.hpp"
#include "model/llama.hpp"
#include "model/model_file.hpp"

using namespace parley;
using Clock = std::chrono::steady_clock;

namespace {

KvDtype kv_cache_dtype = KvDtype::F32;  // --kv-cache-dtype: every Run's cache

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// S sequences of up to P + G tokens, each with its own contiguous run of blocks in one cache.
struct Run {
  static constexpr int bs = 16;
  int blocks_per_seq;
  KvCache kv;
  Run(const LlamaModel& m, int S, int P, int G)
      : blocks_per_seq((P + G + bs - 1) / bs), kv(m.config(), S * blocks_per_seq, bs, kv_cache_dtype) {}

  ForwardBatch batch_for(const std::vector<int>& seqs, const std::vector<int>& tokens, int start, int count) {
    ForwardBatch b;
    b.max_blocks_per_seq = blocks_per_seq;
    for (size_t r = 0; r < seqs.size(); ++r) {
      for (int i = 0; i < blocks_per_seq; ++i) b.block_tables.push_back(seqs[r] * blocks_per_seq + i);
      for (int p = start; p < start + count; ++p) {
        b.token_ids.push_back(tokens[r * count + (p - start)]);
        b.positions.push_back(p);
        b.token_seq.push_back(int(r));
        b.slot_mapping.push_back(int64_t(b.block_tables[r * blocks_per_seq + p / bs]) * bs + p % bs);
      }
      b.logits_indices.push_back(int((r + 1) * count - 1));
    }
    return b;
  }
};

std::vector<int> prompt_ids(int P) {
  std::vector<int> ids(P);
  for (int i = 0; i < P; ++i) ids[i] = 100 + i % 50;  // the same ids the peer script feeds
  return ids;
}

// Prompt tokens per second for one sequence: median of 5 passes after a warm-up (as the peer script).
double prefill_tps(LlamaModel& model, int P) {
  std::vector<double> times;
  std::vector<float> logits;
  for (int rep = 0; rep < 6; ++rep) {
    Run run(model, 1, P, 1);
    const auto b = run.batch_for({0}, prompt_ids(P), 0, P);
    const auto t0 = Clock::now();
    model.forward(b, run.kv, logits);
    if (rep > 0) times.push_back(seconds_since(t0));
  }
  std::nth_element(times.begin(), times.begin() + 2, times.end());
  return P / times[2];
}

// Generated tokens per second across S sequences decoding together, greedy; prefill and one warm-up
// step are untimed, as in the peer script.
double decode_tps(LlamaModel& model, int S, int P, int G) {
  Run run(model, S, P, G + 1);
  std::vector<float> logits;
  std::vector<int> next(S);
  const int V = model.config().vocab_size;
  for (int s = 0; s < S; ++s) {
    model.forward(run.batch_for({s}, prompt_ids(P), 0, P), run.kv, logits);
    next[s] = argmax(logits.data(), V);
  }
  std::vector<int> all(S);
  for (int s = 0; s < S; ++s) all[s] = s;
  auto step = [&](int pos) {
    model.forward(run.batch_for(all, next, pos, 1), run.kv, logits);
    for (int s = 0; s < S; ++s) next[s] = argmax(logits.data() + size_t(s) * V, V);
  };
  step(P);
  const auto t0 = Clock::now();
  for (int i = 1; i <= G; ++i) step(P + i);
  return double(S) * G / seconds_since(t0);
}

nlohmann::json run_peer(const std::string& model, int threads, const std::string& seqs, int P, int G) {
  const std::string cmd = "node " PARLEY_SOURCE_DIR "/bench/peer/llama_peer.mjs --model '" + model + "' --threads " + std::to_string(threads) +
                          " --seqs " + seqs + " --prompt-tokens " + std::to_string(P) + " --gen-tokens " + std::to_string(G);
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf{};
  while (pipe && fgets(buf.data(), buf.size(), pipe.get())) out += buf.data();
  try {
    return nlohmann::json::parse(out);  // an object on success
  } catch (const std::exception&) {
    std::fprintf(stderr, "peer run failed (run bench/peer/install.sh first?): %s\n", out.c_str());
    return nlohmann::json::object();
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Parley decode/prefill benchmark"};
  std::string model_path, seqs_arg = "1,8,32", isa = "auto";
  int threads = 0, P = 32, G = 64, rounds = 3;
  bool peer = false;
  app.add_option("--model", model_path, "GGUF or llama2.c model")->required()->check(CLI::ExistingFile);
  app.add_option("--threads", threads, "Threads (0: all cores)");
  app.add_option("--isa", isa, "auto, avx512, avx2, generic");
  app.add_option("--seqs", seqs_arg, "Concurrent sequences, comma separated");
  app.add_option("--prompt-tokens", P, "Prompt length");
  app.add_option("--gen-tokens", G, "Tokens generated per sequence (timed)");
  app.add_option("--rounds", rounds, "Rounds; each figure is the best round")->check(CLI::PositiveNumber);
  app.add_option_function<std::string>("--kv-cache-dtype", [](const std::string& v) { kv_cache_dtype = parse_kv_dtype(v); },
                                        "KV cache element type: f32 (default), f16 or bf16");
  app.add_flag("--peer", peer, "Also measure llama.cpp (node-llama-cpp) on the same file");
  CLI11_PARSE(app, argc, argv);

  ModelFile file = load_model_file(model_path);
  const cpu::CpuBackend backend(threads, cpu::parse_isa(isa));
  LlamaModel model(file.config, std::move(file.weights), backend);
  std::vector<int> seqs;
  std::stringstream ss(seqs_arg);
  for (std::string item; std::getline(ss, item, ',');) seqs.push_back(std::stoi(item));

  // Rounds alternate the two engines; each figure is its best round, since interference on a shared
  // machine only ever slows a run down.
  const int n = int(seqs.size()) + 1;  // prefill, then one decode figure per sequence count
  std::vector<double> ours(n, 0.0), theirs(n, 0.0);
  for (int round = 0; round < rounds; ++round) {
    if (peer) {
      const nlohmann::json p = run_peer(model_path, backend.threads(), seqs_arg, P, G);
      theirs[0] = std::max(theirs[0], p.value("prefill_tokens_per_s", 0.0));
      for (const auto& d : p.value("decode", nlohmann::json::array()))
        for (int i = 0; i + 1 < n; ++i)
          if (d.value("seqs", 0) == seqs[i]) theirs[i + 1] = std::max(theirs[i + 1], d.value("tokens_per_s", 0.0));
    }
    ours[0] = std::max(ours[0], prefill_tps(model, P));
    for (int i = 0; i + 1 < n; ++i) ours[i + 1] = std::max(ours[i + 1], decode_tps(model, seqs[i], P, G));
  }
  std::printf("model %s (%s), %d threads, isa %s, KV %s, prompt %d tokens, %d generated per sequence, best of %d rounds\n\n",
              model_path.c_str(), file.name.c_str(), backend.threads(), cpu::isa_name(backend.isa()).c_str(),
              kv_dtype_name(kv_cache_dtype).c_str(), P, G, rounds);
  std::printf("| %-16s | %14s | %20s | %6s |\n", "measure", "parley tok/s", "llama.cpp tok/s", "ratio");
  std::printf("|------------------|----------------|----------------------|--------|\n");
  for (int i = 0; i < n; ++i) {
    const std::string name = i == 0 ? "prefill " + std::to_string(P) : "decode " + std::to_string(seqs[i - 1]) + " seqs";
    if (theirs[i] > 0) std::printf("| %-16s | %14.1f | %20.1f | %5.2fx |\n", name.c_str(), ours[i], theirs[i], ours[i] / theirs[i]);
    else std::printf("| %-16s | %14.1f | %20s | %6s |\n", name.c_str(), ours[i], "-", "-");
  }
  return 0;
}
