// The sampler: Philox known answers, greedy ties, filters, and draws that depend only on (seed, position).
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "kernels/philox.hpp"
#include "engine/sampler.hpp"

using namespace parley;

TEST_CASE("Philox4x32-10 matches Random123's known-answer vectors", "[sampler]") {
  struct Kat {
    uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    uint32_t c[4] = {k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]};
    philox4x32_10(c, k.key[0], k.key[1]);
    for (int i = 0; i < 4; ++i) REQUIRE(c[i] == k.out[i]);
  }
}

TEST_CASE("greedy picks the lowest id among equal maxima", "[sampler]") {
  const std::vector<float> logits{0.5f, 2.0f, -1.0f, 2.0f};
  REQUIRE(argmax(logits.data(), 4) == 1);
  SamplingParams p;
  p.temperature = 0.0f;
  Sampler s;
  REQUIRE(s.sample(logits.data(), 4, p, 123, 7) == 1);
}

TEST_CASE("draws follow softmax(logits / T) and depend only on (seed, position)", "[sampler]") {
  const std::vector<float> logits{1.0f, 0.0f, 2.0f, -1.0f, 0.5f};
  SamplingParams p;
  p.temperature = 0.7f;
  Sampler s;
  std::vector<double> expect(5);
  double z = 0;
  for (int i = 0; i < 5; ++i) z += expect[i] = std::exp(logits[i] / 0.7);
  for (double& e : expect) e /= z;
  const int trials = 40000;
  std::vector<int> counts(5);
  for (int pos = 0; pos < trials; ++pos) ++counts[s.sample(logits.data(), 5, p, 42, pos)];
  double chi2 = 0;
  for (int i = 0; i < 5; ++i) chi2 += std::pow(counts[i] - trials * expect[i], 2) / (trials * expect[i]);
  REQUIRE(chi2 < 18.47);  // chi-square, 4 degrees of freedom, p = 0.001
  // Same (seed, position): same token, whatever was sampled in between.
  for (int pos = 0; pos < 50; ++pos) {
    const int a = s.sample(logits.data(), 5, p, 9, pos);
    s.sample(logits.data(), 5, p, 10, pos + 1000);
    REQUIRE(s.sample(logits.data(), 5, p, 9, pos) == a);
  }
  // Different seeds give different streams.
  int differ = 0;
  for (int pos = 0; pos < 200; ++pos)
    differ += s.sample(logits.data(), 5, p, 1, pos) != s.sample(logits.data(), 5, p, 2, pos);
  REQUIRE(differ > 50);
}

TEST_CASE("top_k, top_p and min_p restrict the support", "[sampler]") {
  const std::vector<float> logits{3.0f, 2.9f, 0.0f, 2.0f, -5.0f, 2.95f};
  Sampler s;
  auto support = [&](const SamplingParams& p) {
    std::vector<int> seen(logits.size());
    for (int pos = 0; pos < 3000; ++pos) seen[s.sample(logits.data(), int(logits.size()), p, 5, pos)] = 1;
    return seen;
  };
  SamplingParams p;
  p.top_k = 1;
  REQUIRE(support(p) == std::vector<int>{1, 0, 0, 0, 0, 0});
  p.top_k = 3;
  REQUIRE(support(p) == std::vector<int>{1, 1, 0, 0, 0, 1});
  p = SamplingParams{};
  p.top_p = 0.3f;  // probs ~ 0.31, 0.28, 0.29, ...: the top token alone reaches 0.3
  REQUIRE(support(p) == std::vector<int>{1, 0, 0, 0, 0, 0});
  p.top_p = 0.5f;
  REQUIRE(support(p) == std::vector<int>{1, 0, 0, 0, 0, 1});
  p = SamplingParams{};
  p.min_p = 0.3f;  // exp(2 - 3) = 0.37 of the top survives, exp(0 - 3) does not
  REQUIRE(support(p) == std::vector<int>{1, 1, 0, 1, 0, 1});
}

TEST_CASE("invalid sampling parameters are rejected with vLLM's wording", "[sampler]") {
  auto bad = [](auto mutate) {
    SamplingParams p;
    mutate(p);
    return p;
  };
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.temperature = -0.1f; }).validate(),
                      Catch::Contains("temperature must be non-negative"));
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.top_p = 0.0f; }).validate(), Catch::Contains("top_p must be in (0, 1]"));
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.top_k = -2; }).validate(), Catch::Contains("top_k must be -1"));
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.min_p = 1.5f; }).validate(), Catch::Contains("min_p must be in [0, 1]"));
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.max_tokens = 0; }).validate(),
                      Catch::Contains("max_tokens must be at least 1"));
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.n = 0; }).validate(), Catch::Contains("n must be at least 1"));
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.n = 2, p.temperature = 0; }).validate(),
                      Catch::Contains("n must be 1 when using greedy"));
  REQUIRE_NOTHROW(SamplingParams{}.validate());
}

TEST_CASE("penalties, min_tokens, logprobs, logit_bias and token ids are checked as vLLM does", "[sampler]") {
  auto bad = [](auto mutate) {
    SamplingParams p;
    mutate(p);
    return p;
  };
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.presence_penalty = 2.5f; }).validate(),
                      "presence_penalty must be in [-2, 2], got 2.5.");
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.frequency_penalty = -2.25f; }).validate(),
                      "frequency_penalty must be in [-2, 2], got -2.25.");
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.frequency_penalty = NAN; }).validate(), Catch::Contains("frequency_penalty"));
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.repetition_penalty = 0.0f; }).validate(),
                      "repetition_penalty must be in (0, 2], got 0.");
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.repetition_penalty = 2.1f; }).validate(), Catch::Contains("got 2.1."));
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.min_tokens = -1; }).validate(),
                      "min_tokens must be greater than or equal to 0, got -1.");
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.min_tokens = 17; }).validate(),
                      "min_tokens must be less than or equal to max_tokens=16, got 17.");
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.logprobs = -1; }).validate(), "logprobs must be non-negative, got -1.");
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.logprobs = 21; }).validate(),
                      "Requested sample logprobs of 21, which is greater than max allowed: 20");
  REQUIRE_THROWS_WITH(bad([](auto& p) {
                        p.logit_bias = {{3, 100.5f}};
                      }).validate(),
                      "logit_bias must be in [-100, 100], got 100.5 for token 3.");
  REQUIRE_THROWS_WITH(bad([](auto& p) {
                        p.logit_bias = {{3, 1.0f}, {512, 1.0f}, {600, 2.0f}};
                      }).validate(512),
                      "token_id(s) [512, 600] in logit_bias contain out-of-vocab token ids. Vocabulary size: 512");
  REQUIRE_THROWS_WITH(bad([](auto& p) { p.stop_token_ids = {-1}; }).validate(),
                      Catch::StartsWith("token_id(s) [-1] in stop_token_ids contain out-of-vocab token ids"));
  REQUIRE_THROWS_WITH(bad([](auto& p) {
                        p.stop_token_ids = {2, 512};
                      }).validate(512),
                      Catch::StartsWith("token_id(s) [512] in stop_token_ids"));
  // Boundaries are allowed; ids are only checked against a known vocabulary.
  SamplingParams ok;
  ok.presence_penalty = -2.0f, ok.frequency_penalty = 2.0f, ok.repetition_penalty = 2.0f;
  ok.min_tokens = 16, ok.logprobs = 20, ok.logit_bias = {{511, -100.0f}, {5000, 100.0f}};
  ok.stop_token_ids = {0, 700};
  REQUIRE_NOTHROW(ok.validate());
  ok.logit_bias.pop_back(), ok.stop_token_ids.pop_back();
  REQUIRE_NOTHROW(ok.validate(512));
}
