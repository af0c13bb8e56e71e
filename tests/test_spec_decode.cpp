// Speculative decoding's plain parts: --speculative-config parsing, the n-gram proposer's
// matching rules, exact verification with placeholder drafts, and the rejection sampler's distribution.
#include <catch2/catch.hpp>

#include <array>

#include "engine/ngram_proposer.hpp"
#include "kernels/philox.hpp"
#include "engine/rejection_sampler.hpp"
#include "engine/speculative_config.hpp"

namespace parley {

TEST_CASE("speculative config: vLLM's fields, defaults and errors", "[spec]") {
  auto c = SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 3})");
  REQUIRE(c.method == SpecMethod::Ngram);
  REQUIRE(c.num_speculative_tokens == 3);
  REQUIRE((c.prompt_lookup_min == 5 && c.prompt_lookup_max == 5));
  REQUIRE(c.verify == SpecVerify::Exact);
  REQUIRE(c.pad_uniform);
  c = SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4})");
  REQUIRE((c.prompt_lookup_min == 4 && c.prompt_lookup_max == 4));
  c = SpeculativeConfig::parse(
      R"({"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_min": 2, "prompt_lookup_max": 4,
                                   "verify": "rejection", "pad_uniform": false})");
  REQUIRE((c.prompt_lookup_min == 2 && c.prompt_lookup_max == 4));
  REQUIRE(c.verify == SpecVerify::Rejection);
  REQUIRE(!c.pad_uniform);
  c = SpeculativeConfig::parse(R"({"method": "draft_model", "num_speculative_tokens": 4, "model": "d.gguf"})");
  REQUIRE((c.method == SpecMethod::DraftModel && c.model == "d.gguf"));
  c = SpeculativeConfig::parse(R"({"method": "layer_skip", "num_speculative_tokens": 2, "draft_layers": 2})");
  REQUIRE((c.method == SpecMethod::LayerSkip && c.draft_layers == 2 && c.method_name() == "layer_skip"));

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"{", "not valid JSON"},
      {"[1]", "expected a JSON object"},
      {R"({"num_speculative_tokens": 3})", "method is required"},
      {R"({"method": "medusa", "num_speculative_tokens": 3})", "unknown method \"medusa\""},
      {R"({"method": "ngram"})", "num_speculative_tokens is required"},
      {R"({"method": "ngram", "num_speculative_tokens": 0})", "num_speculative_tokens must be a positive integer"},
      {R"({"method": "ngram", "num_speculative_tokens": 2.5})", "num_speculative_tokens must be a positive integer"},
      {R"({"method": "ngram", "num_speculative_tokens": 17})", "at most 16"},
      {R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 4, "prompt_lookup_max": 2})",
       "must not exceed"},
      {R"({"method": "ngram", "num_speculative_tokens": 3, "model": "x"})", "model applies only to method draft_model"},
      {R"({"method": "draft_model", "num_speculative_tokens": 3})", "needs \"model\""},
      {R"({"method": "layer_skip", "num_speculative_tokens": 3})", "needs \"draft_layers\""},
      {R"({"method": "ngram", "num_speculative_tokens": 3, "verify": "greedy"})", "verify must be"},
      {R"({"method": "ngram", "num_speculative_tokens": 3, "pad_uniform": 1})", "pad_uniform must be true or false"},
      {R"({"method": "ngram", "num_speculative_tokens": 3, "draft_tensor_parallel_size": 1})",
       "unknown field \"draft_tensor_parallel_size\""},
  };
  for (const auto& [json, message] : bad) {
    CAPTURE(json);
    REQUIRE_THROWS_WITH(SpeculativeConfig::parse(json),
                        Catch::Contains(message) && Catch::StartsWith("--speculative-config: "));
  }
}

TEST_CASE("ngram proposer: the longest earlier suffix match drafts what followed it", "[spec]") {
  using V = std::vector<int>;
  // vLLM's example: [4,2,3] never occurred before; [2,3] did, followed by 4,2,3 (only three tokens left).
  REQUIRE(NgramProposer(2, 3, 4, 100).propose(V{1, 2, 3, 4, 2, 3}) == V{4, 2, 3});
  // The longest match wins over a shorter one that occurs earlier ([8] alone would draft 1, 9).
  REQUIRE(NgramProposer(1, 3, 2, 100).propose(V{8, 1, 9, 8, 2, 9, 8}) == V{2, 9});
  // Among matches of one length, the earliest occurrence.
  REQUIRE(NgramProposer(2, 2, 2, 100).propose(V{6, 7, 1, 6, 7, 2, 6, 7}) == V{1, 6});
  // Shorter than min_n: nothing; at min_n: a draft.
  REQUIRE(NgramProposer(3, 4, 2, 100).propose(V{1, 2, 5, 1, 2}).empty());
  REQUIRE(NgramProposer(2, 4, 2, 100).propose(V{1, 2, 5, 1, 2}) == V{5, 1});
  // The draft stops at k, and at max_model_len.
  const V periodic = {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2};
  REQUIRE(NgramProposer(2, 2, 5, 100).propose(periodic) == V{3, 1, 2, 3, 1});
  REQUIRE(NgramProposer(2, 2, 5, 13).propose(periodic) == V{3, 1});
  REQUIRE(NgramProposer(2, 2, 5, 11).propose(periodic).empty());
  // An occurrence overlapping the suffix counts (a run of one token), the suffix itself does not.
  REQUIRE(NgramProposer(2, 3, 3, 100).propose(V{4, 4, 4}) == V{4});
  REQUIRE(NgramProposer(1, 1, 3, 100).propose(V{4}).empty());
  REQUIRE(NgramProposer(1, 2, 3, 100).propose(V{}).empty());
  REQUIRE_THROWS_AS(NgramProposer(3, 2, 1, 10), std::invalid_argument);
  REQUIRE_THROWS_AS(NgramProposer(0, 2, 1, 10), std::invalid_argument);
}

TEST_CASE("exact verification: accept while equal, placeholders never match", "[spec]") {
  using V = std::vector<int>;
  auto r = verify_exact(V{5, 6, 7}, V{5, 6, 7, 8});
  REQUIRE(r.num_accepted == 3);
  REQUIRE(r.tokens == V{5, 6, 7, 8});  // all accepted: the bonus token
  r = verify_exact(V{5, 9, 7}, V{5, 6, 7, 8});
  REQUIRE(r.num_accepted == 1);
  REQUIRE(r.tokens == V{5, 6});  // the first mismatch emits the target's token; later drafts are moot
  r = verify_exact(V{kPlaceholderDraft, kPlaceholderDraft}, V{3, 4, 5});
  REQUIRE(r.num_accepted == 0);
  REQUIRE(r.tokens == V{3});  // a padded request emits exactly what no speculation would
  r = verify_exact(V{5, kPlaceholderDraft}, V{5, 6, 8});
  REQUIRE(r.tokens == V{5, 6});
  REQUIRE_THROWS_WITH(verify_exact(V{1, 2}, V{1, 2}), Catch::Contains("need 3 target tokens"));
}

namespace {

// Pearson's chi-square of observed counts against expected probabilities.
double chi_square(const std::vector<int>& counts, const std::vector<float>& p, int n) {
  double x2 = 0;
  for (size_t t = 0; t < p.size(); ++t) {
    const double e = double(p[t]) * n;
    x2 += (counts[t] - e) * (counts[t] - e) / e;
  }
  return x2;
}

}  // namespace

TEST_CASE("rejection sampler: emitted tokens follow the target distribution", "[spec]") {
  const std::vector<float> p0 = {0.1f, 0.2f, 0.3f, 0.4f}, p1 = {0.4f, 0.1f, 0.25f, 0.25f},
                           p2 = {0.25f, 0.25f, 0.25f, 0.25f};
  const std::vector<float> q0 = {0.4f, 0.3f, 0.2f, 0.1f}, q1 = {0.1f, 0.1f, 0.1f, 0.7f};
  const int trials = 100000;
  const double critical = 16.27;  // chi-square, 3 degrees of freedom, p = 0.001
  for (bool one_hot : {false, true}) {
    CAPTURE(one_hot);
    std::vector<int> first(4, 0), second(4, 0);
    int num_second = 0, recovered = 0, bonus = 0;
    for (int s = 0; s < trials; ++s) {
      const uint64_t seed = 0x9E3779B97F4A7C15ull * uint64_t(s + 1);
      // Drafts drawn from q (their own stream), or a fixed guess for a proposer without probabilities.
      const std::vector<int> drafts = one_hot ? std::vector<int>{2, 0}
                                              : std::vector<int>{sample_inverse_cdf(q0, philox_uniform(seed, 0, 7)),
                                                                 sample_inverse_cdf(q1, philox_uniform(seed, 1, 7))};
      const auto r = verify_rejection(
          drafts, {p0, p1, p2}, one_hot ? std::vector<std::vector<float>>{} : std::vector<std::vector<float>>{q0, q1},
          seed, 0);
      REQUIRE(r.tokens.size() == size_t(r.num_accepted) + 1);
      ++first[size_t(r.tokens[0])];
      if (r.tokens.size() >= 2) ++second[size_t(r.tokens[1])], ++num_second;
      recovered += r.num_accepted < 2;
      bonus += r.num_accepted == 2;
    }
    REQUIRE(chi_square(first, p0, trials) < critical);
    REQUIRE(chi_square(second, p1, num_second) < critical);  // given position 0 accepted, position 1 follows p1
    REQUIRE(recovered > trials / 10);                        // the residual path ran
    REQUIRE(bonus > trials / 20);                            // and the bonus path
  }
  // A placeholder is always rejected; the token then follows p itself.
  std::vector<int> counts(4, 0);
  for (int s = 0; s < trials; ++s) {
    const auto r = verify_rejection(std::vector<int>{kPlaceholderDraft}, {p0, p1}, {}, uint64_t(s) * 7919 + 1, 5);
    REQUIRE(r.num_accepted == 0);
    ++counts[size_t(r.tokens[0])];
  }
  REQUIRE(chi_square(counts, p0, trials) < critical);
}

}  // namespace parley
