// Cost of one sampled token over a 32000-token vocabulary, per filter and per shape of distribution, and of its
// logprobs (the token's alone, and with the top 20).
// Usage: bench_sampler
#include <chrono>
#include <cstdio>
#include <vector>

#include "engine/sampler.hpp"

using namespace parley;

namespace {

// Logits uniform in [0, spread): a small spread is a flat distribution, a large one a peaked one.
std::vector<float> make_logits(int vocab, float spread) {
  std::vector<float> logits(vocab);
  uint64_t s = 1;
  for (float& x : logits) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = spread * float(s >> 40) / float(1 << 24);
  }
  return logits;
}

template <class F>
double us_per_call(F call) {
  const int n = 300;
  long sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) sink += call(i);
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  return sink == -1 ? 0 : us;
}

}  // namespace

int main() {
  const int vocab = 32000;
  struct Row {
    const char* name;
    SamplingParams p;
  };
  std::vector<Row> rows(5);
  rows[0] = {"greedy", {}};
  rows[0].p.temperature = 0.0f;
  rows[1] = {"temperature 0.8", {}};
  rows[1].p.temperature = 0.8f;
  rows[2] = {"top_k 50", rows[1].p};
  rows[2].p.top_k = 50;
  rows[3] = {"top_p 0.9", rows[1].p};
  rows[3].p.top_p = 0.9f;
  rows[4] = {"min_p 0.05", rows[1].p};
  rows[4].p.min_p = 0.05f;
  std::printf("| %-16s | %18s | %18s | %18s |\n", "sampling", "flat (spread 4)", "mid (spread 20)",
              "peaked (spread 60)");
  std::printf("|------------------|--------------------|--------------------|--------------------|\n");
  const auto flat = make_logits(vocab, 4.0f), mid = make_logits(vocab, 20.0f), peaked = make_logits(vocab, 60.0f);
  Sampler sampler;
  for (const Row& r : rows) {
    auto draw = [&](const std::vector<float>& l) {
      return us_per_call([&](int i) { return sampler.sample(l.data(), vocab, r.p, 7, i); });
    };
    std::printf("| %-16s | %15.0f us | %15.0f us | %15.0f us |\n", r.name, draw(flat), draw(mid), draw(peaked));
  }
  for (int top : {0, 20}) {
    auto logprobs = [&](const std::vector<float>& l) {
      return us_per_call([&](int i) { return compute_token_logprobs(l.data(), vocab, i * 97 % vocab, top).rank; });
    };
    std::printf("| logprobs, top %-2d | %15.0f us | %15.0f us | %15.0f us |\n", top, logprobs(flat), logprobs(mid),
                logprobs(peaked));
  }
  return 0;
}
