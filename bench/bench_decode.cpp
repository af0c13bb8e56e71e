// Offline decode and prefill throughput of Parley's forward pass, with llama.cpp measured on the same
// GGUF in the same run (bench/peer/llama_peer.mjs through node-llama-cpp) and the ratio; the resident memory
// after load against the file and the KV cache, decode at one sequence as GB/s of weights read against a
// measured read-bandwidth peak, and prefill and the largest decode batch as weight products per second against
// a measured peak of the integer multiply the quantized kernels are built on.
// Usage: bench_decode --model M.gguf [--threads T] [--seqs 1,8,32] [--prompt-tokens P] [--prefill-tokens N]
//                     [--gen-tokens G] [--rounds R] [--prefill-reps R] [--kv-cache-dtype f32|f16|bf16] [--peer]
//                     [--csv FILE --label NAME]
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/bench_compute.hpp"
#include "bench/bench_memory.hpp"
#include "engine/sampler.hpp"
#include "model/gguf.hpp"
#include "model/kv_cache_layout.hpp"
#include "model/llama.hpp"
#include "model/model_file.hpp"
#include "model/quantize_recipe.hpp"

using namespace parley;
using Clock = std::chrono::steady_clock;

namespace {

KvDtype kv_cache_dtype = KvDtype::F32;  // --kv-cache-dtype: every Run's cache

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// S sequences of up to P + G tokens, each with its own contiguous run of blocks in one cache, in every KV group
// (a sliding-window model's window layers and full layers keep separate blocks).
struct Run {
  static constexpr int bs = 16;
  int blocks_per_seq, seqs, groups;
  KvCache kv;
  Run(const LlamaModel& m, int S, int P, int G)
      : blocks_per_seq((P + G + bs - 1) / bs),
        seqs(S),
        groups(KvCacheLayout::for_model(m.config()).num_groups()),
        kv(m.config(), groups * S * blocks_per_seq, bs, kv_cache_dtype) {}

  int block(int g, int seq, int i) const { return (g * seqs + seq) * blocks_per_seq + i; }
  ForwardBatch batch_for(const std::vector<int>& rows, const std::vector<int>& tokens, int start, int count) {
    ForwardBatch b;
    b.max_blocks_per_seq = blocks_per_seq;
    b.num_kv_groups = groups;
    for (int g = 0; g < groups; ++g)
      for (int seq : rows)
        for (int i = 0; i < blocks_per_seq; ++i) b.block_tables.push_back(block(g, seq, i));
    for (size_t r = 0; r < rows.size(); ++r) {
      for (int p = start; p < start + count; ++p) {
        b.token_ids.push_back(tokens[r * count + (p - start)]);
        b.positions.push_back(p);
        b.token_seq.push_back(int(r));
      }
      b.logits_indices.push_back(int((r + 1) * count - 1));
    }
    for (int g = 0; g < groups; ++g)
      for (size_t r = 0; r < rows.size(); ++r)
        for (int p = start; p < start + count; ++p)
          b.slot_mapping.push_back(int64_t(block(g, rows[r], p / bs)) * bs + p % bs);
    return b;
  }
};

std::vector<int> prompt_ids(int P) {
  std::vector<int> ids(P);
  for (int i = 0; i < P; ++i) ids[i] = 100 + i % 50;  // the same ids the peer script feeds
  return ids;
}

// Prompt tokens per second for one sequence: median of `reps` passes after a warm-up (as the peer script).
double prefill_tps(LlamaModel& model, int P, int reps) {
  std::vector<double> times;
  std::vector<float> logits;
  for (int rep = 0; rep <= reps; ++rep) {
    Run run(model, 1, P, 1);
    const auto b = run.batch_for({0}, prompt_ids(P), 0, P);
    const auto t0 = Clock::now();
    model.forward(b, run.kv, logits);
    if (rep > 0) times.push_back(seconds_since(t0));
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return P / times[size_t(reps / 2)];
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

nlohmann::json run_peer(const std::string& model, int threads, const std::string& seqs, int P, int prefill, int reps,
                        int G) {
  const std::string cmd = "node " PARLEY_SOURCE_DIR "/bench/peer/llama_peer.mjs --model '" + model + "' --threads " +
                          std::to_string(threads) + " --seqs " + seqs + " --prompt-tokens " + std::to_string(P) +
                          " --prefill-tokens " + std::to_string(prefill) + " --reps " + std::to_string(reps) +
                          " --gen-tokens " + std::to_string(G);
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

// The file's weight type as llama-quantize names it (general.file_type), "f32" when it does not say.
std::string file_type_of(const std::string& path) {
  if (!is_gguf_file(path)) return "f32";
  const GgufFile f(path);
  return std::string(file_type_name(static_cast<FileType>(f.get_int("general.file_type", 0))));
}

double mib(size_t bytes) { return double(bytes) / (1 << 20); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Parley decode/prefill benchmark"};
  std::string model_path, seqs_arg = "1,8,32", isa = "auto", csv_path, label;
  int threads = 0, P = 32, prefill = 0, G = 64, rounds = 3, prefill_reps = 5;
  bool peer = false, peer_first = false;
  app.add_option("--model", model_path, "GGUF or llama2.c model")->required()->check(CLI::ExistingFile);
  app.add_option("--threads", threads, "Threads (0: all cores)");
  app.add_option("--isa", isa, "auto, amx, avx512 (AMX off), avx2, generic");
  app.add_option("--seqs", seqs_arg, "Concurrent sequences, comma separated");
  app.add_option("--prompt-tokens", P, "Prompt length before decode");
  app.add_option("--prefill-tokens", prefill, "Prompt length of the prefill figure (0: --prompt-tokens)");
  app.add_option("--prefill-reps", prefill_reps, "Timed prefill passes (the median counts)")
      ->check(CLI::PositiveNumber);
  app.add_option("--gen-tokens", G, "Tokens generated per sequence (timed)");
  app.add_option("--rounds", rounds, "Rounds; each figure is the best round")->check(CLI::PositiveNumber);
  app.add_option_function<std::string>(
      "--kv-cache-dtype", [](const std::string& v) { kv_cache_dtype = parse_kv_dtype(v); },
      "KV cache element type: f32 (default), f16 or bf16");
  app.add_flag("--peer", peer, "Also measure llama.cpp (node-llama-cpp) on the same file");
  app.add_flag("--peer-first", peer_first,
               "Measure llama.cpp's rounds before loading the model here: for a file too large to be resident twice");
  app.add_option("--csv", csv_path,
                 "Append the figures to this file: label,type,seqs,parley,llama.cpp tok/s (seqs 0: prefill)");
  app.add_option("--label", label, "The model's name in --csv (default: the file name)");
  CLI11_PARSE(app, argc, argv);
  if (prefill <= 0) prefill = P;
  if (label.empty()) label = std::filesystem::path(model_path).stem().string();
  std::vector<int> seqs;
  std::stringstream ss(seqs_arg);
  for (std::string item; std::getline(ss, item, ',');) seqs.push_back(std::stoi(item));

  const cpu::CpuBackend backend(threads, cpu::parse_isa(isa));
  const int n = int(seqs.size()) + 1;  // prefill, then one decode figure per sequence count
  std::vector<double> ours(n, 0.0), theirs(n, 0.0);
  auto peer_round = [&](int round) {
    std::fprintf(stderr, "round %d: llama.cpp...\n", round + 1);
    const nlohmann::json p = run_peer(model_path, backend.threads(), seqs_arg, P, prefill, prefill_reps, G);
    theirs[0] = std::max(theirs[0], p.value("prefill_tokens_per_s", 0.0));
    for (const auto& d : p.value("decode", nlohmann::json::array()))
      for (int i = 0; i + 1 < n; ++i)
        if (d.value("seqs", 0) == seqs[i]) theirs[i + 1] = std::max(theirs[i + 1], d.value("tokens_per_s", 0.0));
  };
  if (peer && peer_first)
    for (int round = 0; round < rounds; ++round) peer_round(round);

  // Resident memory: before loading, once the model is ready, and with the largest run's KV cache beside it.
  const size_t rss_start = bench::resident_bytes();
  ModelFile file = load_model_file(model_path);
  LlamaModel model(file.config, std::move(file.weights), backend);
  const size_t rss_model = bench::resident_bytes(), file_bytes = std::filesystem::file_size(model_path);
  size_t kv_bytes = 0, rss_kv = 0;
  {
    const Run run(model, *std::max_element(seqs.begin(), seqs.end()), P, G + 1);
    kv_bytes = size_t(run.kv.num_blocks()) * size_t(run.kv.bytes_per_block());
    rss_kv = bench::resident_bytes();
  }
  std::fprintf(stderr, "probing read bandwidth on %d threads...\n", backend.threads());
  double peak = bench::read_bandwidth(backend.threads());  // probed again after the rounds: the best counts
  const cpu::QuantIsa quant_isa = cpu::quant_isa_for(backend.isa());
  bench::MultiplyPeak multiply = bench::multiply_peak(quant_isa, backend.threads());
  const std::string dtype = file_type_of(model_path);

  // Rounds alternate the two engines (unless the peer ran first); each figure is its best round, since
  // interference on a shared machine only ever slows a run down.
  for (int round = 0; round < rounds; ++round) {
    if (peer && !peer_first) peer_round(round);
    std::fprintf(stderr, "round %d: parley prefill %d...\n", round + 1, prefill);
    ours[0] = std::max(ours[0], prefill_tps(model, prefill, prefill_reps));
    for (int i = 0; i + 1 < n; ++i) {
      std::fprintf(stderr, "round %d: parley decode %d seqs...\n", round + 1, seqs[i]);
      ours[i + 1] = std::max(ours[i + 1], decode_tps(model, seqs[i], P, G));
    }
  }
  peak = std::max(peak, bench::read_bandwidth(backend.threads()));
  multiply.macs_per_s = std::max(multiply.macs_per_s, bench::multiply_peak(quant_isa, backend.threads()).macs_per_s);
  std::printf(
      "model %s (%s, %s), %d threads, isa %s, KV %s, prefill %d tokens, decode after %d, %d generated per sequence, "
      "best of %d rounds\n",
      model_path.c_str(), file.name.c_str(), dtype.c_str(), backend.threads(), cpu::isa_name(backend.isa()).c_str(),
      kv_dtype_name(kv_cache_dtype).c_str(), prefill, P, G, rounds);
  std::printf(
      "resident after load %.1f MiB (+%.1f MiB from load: file %.1f MiB, weights %.1f MiB; %.2fx the file); "
      "with the KV cache of %d seqs (%.1f MiB) +%.1f MiB, %.2fx file + KV\n",
      mib(rss_model), mib(rss_model - rss_start), mib(file_bytes), mib(model.weight_bytes()),
      double(rss_model - rss_start) / double(file_bytes), *std::max_element(seqs.begin(), seqs.end()), mib(kv_bytes),
      mib(rss_kv - rss_start), double(rss_kv - rss_start) / double(file_bytes + kv_bytes));
  const double streamed = double(model.streamed_weight_bytes());
  std::printf(
      "read bandwidth (%d threads, best of 16 sums over 512 MiB) %.1f GB/s; a decode step reads %.1f MB of weights\n\n",
      backend.threads(), peak / 1e9, streamed / 1e6);
  std::printf("| %-16s | %14s | %20s | %6s |\n", "measure", "parley tok/s", "llama.cpp tok/s", "ratio");
  std::printf("|------------------|----------------|----------------------|--------|\n");
  for (int i = 0; i < n; ++i) {
    const std::string name =
        i == 0 ? "prefill " + std::to_string(prefill) : "decode " + std::to_string(seqs[i - 1]) + " seqs";
    if (theirs[i] > 0)
      std::printf("| %-16s | %14.1f | %20.1f | %5.2fx |\n", name.c_str(), ours[i], theirs[i], ours[i] / theirs[i]);
    else
      std::printf("| %-16s | %14.1f | %20s | %6s |\n", name.c_str(), ours[i], "-", "-");
  }
  // Batch 1 streams every matrix once per token: weight bytes times tokens/s, as a share of the probe.
  const auto one = std::find(seqs.begin(), seqs.end(), 1);
  if (one != seqs.end()) {
    const int i = int(one - seqs.begin()) + 1;
    const double ours_gbs = streamed * ours[i] / 1e9, theirs_gbs = streamed * theirs[i] / 1e9;
    char theirs_text[32] = "-";
    if (theirs[i] > 0)
      std::snprintf(theirs_text, sizeof theirs_text, "%.1f (%.0f%%)", theirs_gbs, 100 * theirs_gbs * 1e9 / peak);
    std::printf("| %-16s | %7.1f (%3.0f%%) | %20s | %6s |\n", "batch 1 GB/s", ours_gbs, 100 * ours_gbs * 1e9 / peak,
                theirs_text, "");
  }
  // Prefill and the largest batch are bound by the multiplies: weight products per second (a prefill computes
  // one row of logits, a decode token one each), as a share of the probe.
  if (!multiply.instruction.empty()) {
    const double layers = double(model.layer_weight_elements()), head = double(model.head_weight_elements());
    auto row = [&](const std::string& name, int i, double per_token) {
      const double ours_g = per_token * ours[i] / 1e9, theirs_g = per_token * theirs[i] / 1e9;
      char theirs_text[32] = "-";
      if (theirs[i] > 0)
        std::snprintf(theirs_text, sizeof theirs_text, "%.1f (%.0f%%)", theirs_g,
                      100 * theirs_g * 1e9 / multiply.macs_per_s);
      std::printf("| %-16s | %7.1f (%3.0f%%) | %20s | %6s |\n", name.c_str(), ours_g,
                  100 * ours_g * 1e9 / multiply.macs_per_s, theirs_text, "");
    };
    row("prefill GMAC/s", 0, layers + head / prefill);
    const int largest = int(std::max_element(seqs.begin(), seqs.end()) - seqs.begin());
    if (seqs[largest] > 1) row("decode " + std::to_string(seqs[largest]) + " GMAC/s", largest + 1, layers + head);
    std::printf(
        "\nmultiply peak (%s alone, %d threads, best of 10 passes) %.1f GMAC/s; a token multiplies %.1f M "
        "weights in the layers, %.1f M in the head\n",
        multiply.instruction.c_str(), backend.threads(), multiply.macs_per_s / 1e9, layers / 1e6, head / 1e6);
  }
  if (!csv_path.empty()) {
    std::ofstream csv(csv_path, std::ios::app);
    for (int i = 0; i < n; ++i)
      csv << label << ',' << dtype << ',' << (i == 0 ? 0 : seqs[i - 1]) << ',' << ours[i] << ',' << theirs[i] << '\n';
  }
  return 0;
}
