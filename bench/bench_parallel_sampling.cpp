// n = 8 samples of one prompt: the delayed split (one prefill, children share the
// prompt's blocks) against 8 separate n = 1 requests sent at once (prefix caching on, and off) and
// against the split turned off. Prints prefill tokens computed, peak KV blocks and wall time, and checks that all
// three give every sample the same token ids.
//   bench_parallel_sampling [--model M.gguf] [--prompt-tokens 512] [--gen-tokens 128] [--n 8] [--threads T]
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <map>
#include <random>

#include "engine/engine_core.hpp"
#include "model/model_source.hpp"

namespace {

using namespace parley;

struct Result {
  int64_t prefill = 0;
  int peak_blocks = 0;
  double seconds = 0;
  std::map<std::string, std::vector<int>> tokens;
};

enum class Mode { DelayedSplit, SeparateRequests, SeparateNoCache, SplitOff };

Result run(LlamaModel& model, const std::vector<int>& prompt, int n, int gen, Mode mode, int block_size) {
  SchedulerConfig c;
  c.max_model_len = model.config().max_seq_len;
  c.block_size = block_size;
  c.num_kv_blocks = n * ((int(prompt.size()) + gen) / block_size + 2);  // room for every sample at once
  c.max_num_batched_tokens = 2048;
  c.enable_delayed_split = mode != Mode::SplitOff;
  c.enable_prefix_caching = mode != Mode::SeparateNoCache;
  EngineCore core(model, c);
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_p = 0.95f;
  p.max_tokens = gen;
  p.ignore_eos = true;
  const auto start = std::chrono::steady_clock::now();
  if (mode == Mode::SeparateRequests || mode == Mode::SeparateNoCache) {
    for (int i = 0; i < n; ++i) core.add_request(Request("s." + std::to_string(i), prompt, p, 42 + uint64_t(i)));
  } else {
    p.n = n;
    Request parent("s.0", prompt, p, 42);
    for (int i = 0; i < n; ++i)
      parent.child_req_ids.push_back("s." + std::to_string(i)), parent.child_seeds.push_back(42 + uint64_t(i));
    core.add_request(std::move(parent));
  }
  Result r;
  while (core.has_unfinished_requests())
    for (const EngineCoreOutput& o : core.step()) {
      auto& t = r.tokens[o.req_id];
      t.insert(t.end(), o.new_token_ids.begin(), o.new_token_ids.end());
    }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const SchedulerStats s = core.scheduler().stats();
  r.prefill = s.prefill_tokens_computed;
  r.peak_blocks = s.peak_used_blocks;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Parallel sampling: delayed split against separate requests"};
  std::string model_path;
  int prompt_tokens = 512, gen = 128, n = 8, threads = 0, block_size = 16;
  app.add_option("--model", model_path, "GGUF (default: the built-in model)");
  app.add_option("--prompt-tokens", prompt_tokens)->capture_default_str();
  app.add_option("--gen-tokens", gen)->capture_default_str();
  app.add_option("--n", n)->capture_default_str();
  app.add_option("--threads", threads)->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  ModelFile file = load_model_with_vocab(model_path);
  cpu::CpuBackend backend(threads);
  LlamaModel model(file.config, std::move(file.weights), backend);
  if (prompt_tokens + gen > file.config.max_seq_len) {
    std::fprintf(stderr, "prompt + gen tokens exceed the context of %d\n", file.config.max_seq_len);
    return 2;
  }
  std::mt19937 rng(7);
  std::vector<int> prompt;
  for (int i = 0; i < prompt_tokens; ++i) prompt.push_back(3 + int(rng() % uint32_t(file.config.vocab_size - 3)));

  std::printf("n = %d samples of %d tokens on a %d-token prompt (temperature 0.8, top_p 0.95, seeds 42..%d)\n\n", n,
              gen, prompt_tokens, 41 + n);
  std::printf("| mode | prefill tokens computed | peak KV blocks | wall time | samples equal to the split's |\n");
  std::printf("|---|---|---|---|---|\n");
  const Result split = run(model, prompt, n, gen, Mode::DelayedSplit, block_size);
  const std::pair<const char*, Mode> modes[] = {{"delayed split", Mode::DelayedSplit},
                                                {"8 separate requests (prefix caching on)", Mode::SeparateRequests},
                                                {"8 separate requests (prefix caching off)", Mode::SeparateNoCache},
                                                {"split off (--no-delayed-split)", Mode::SplitOff}};
  for (const auto& [name, mode] : modes) {
    const Result r = mode == Mode::DelayedSplit ? split : run(model, prompt, n, gen, mode, block_size);
    std::printf("| %s | %lld | %d | %.2f s (%.2fx) | %s |\n", name, (long long)r.prefill, r.peak_blocks, r.seconds,
                r.seconds / split.seconds, r.tokens == split.tokens ? "yes" : "NO");
  }
  return 0;
}
