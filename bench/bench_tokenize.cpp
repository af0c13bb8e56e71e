// Tokenization throughput of a GGUF's vocabulary on a corpus (a JSON array of strings), one string per
// call and the whole corpus as one text; prints one JSON line for bench/bench_tokenize.mjs, which times
// llama.cpp on the same corpus and GGUF beside it.
// Usage: bench_tokenize --model FILE.gguf --corpus corpus.json [--repeats N]
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>

#include "model/model_file.hpp"
#include "model/tokenizer.hpp"

using namespace parley;

namespace {

template <typename F>
double best_seconds(int repeats, F&& run) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Tokenization throughput"};
  std::string model, corpus_path;
  int repeats = 5;
  app.add_option("--model", model, "A GGUF with a vocabulary")->required();
  app.add_option("--corpus", corpus_path, "A JSON array of strings")->required();
  app.add_option("--repeats", repeats, "Best of N runs")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::ifstream in(corpus_path);
  const auto corpus = nlohmann::json::parse(in).get<std::vector<std::string>>();
  auto vocab = load_gguf_vocab(model);
  if (!vocab) {
    std::fprintf(stderr, "bench_tokenize: %s has no vocabulary\n", model.c_str());
    return 1;
  }
  const Tokenizer tok(std::move(*vocab));
  std::string joined;
  for (const auto& s : corpus) joined += s;

  size_t tokens = 0;
  const double per_string = best_seconds(repeats, [&] {
    tokens = 0;
    for (const auto& s : corpus) tokens += tok.encode(s, false).size();
  });
  size_t joined_tokens = 0;
  const double whole = best_seconds(repeats, [&] { joined_tokens = tok.encode(joined, false).size(); });
  std::printf("%s\n", nlohmann::json{{"bytes", joined.size()},
                                     {"strings", corpus.size()},
                                     {"tokens", tokens},
                                     {"joined_tokens", joined_tokens},
                                     {"per_string_s", per_string},
                                     {"joined_s", whole}}
                          .dump()
                          .c_str());
  return 0;
}
