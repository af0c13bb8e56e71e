// Batched sampling over the persistent batch's metadata: raw logprobs, min_tokens, logit_bias and
// penalties with hand-computed values, and rows with none of them sampled exactly as Sampler::sample.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "engine/input_batch.hpp"
#include "engine/sampler.hpp"
#include "kernel_inputs.hpp"

using namespace parley;

namespace {

constexpr int kEos = 2;

CachedRequestState request(const std::string& id, std::vector<int> prompt, std::vector<int> output, SamplingParams p,
                           uint64_t seed = 0) {
  return {id, std::move(prompt), std::move(output), std::move(p), seed, {{0}}, 0};
}

SamplingParams greedy() {
  SamplingParams p;
  p.temperature = 0.0f;
  return p;
}

std::vector<float> processed(Sampler& s, const std::vector<float>& logits, int row, const SamplingMetadata& m) {
  const float* out = s.process_logits(logits.data(), int(logits.size()), row, m);
  return {out, out + logits.size()};
}

}  // namespace

TEST_CASE("logprobs are the raw log-softmax with ranks and top tokens tied by id", "[sampler]") {
  const std::vector<float> logits{1.0f, 3.0f, 3.0f, 0.5f, -2.0f};
  double z = 0;
  for (float x : logits) z += std::exp(double(x));
  auto expect = [&](int i) { return Approx(double(logits[i]) - std::log(z)).epsilon(1e-6); };

  const TokenLogprobs lp = compute_token_logprobs(logits.data(), 5, 0, 4);
  REQUIRE(lp.token == 0);
  REQUIRE(lp.logprob == expect(0));
  REQUIRE(lp.rank == 3);  // below the two 3.0s
  REQUIRE(lp.top.size() == 4);
  const int ids[] = {1, 2, 0, 3};  // 1 and 2 tie: the lower id first
  for (int r = 0; r < 4; ++r) {
    REQUIRE(lp.top[r].first == ids[r]);
    REQUIRE(lp.top[r].second == expect(ids[r]));
  }
  REQUIRE(compute_token_logprobs(logits.data(), 5, 2, 0).rank == 1);  // a tie with the best is rank 1
  REQUIRE(compute_token_logprobs(logits.data(), 5, 2, 0).top.empty());
  REQUIRE(compute_token_logprobs(logits.data(), 5, 4, 0).rank == 5);
  REQUIRE(compute_token_logprobs(logits.data(), 5, 4, 9).top.size() == 5);  // capped at the vocabulary
}

TEST_CASE("logprobs at real vocabulary sizes match a long double log-softmax and a full sort", "[sampler]") {
  for (int vocab : {17, 1000, 32000, 128256}) {
    // Peaked rows, and flat ones (an untrained head) where a float sum of the exps would drift.
    const float scale = vocab % 2 ? 12.0f : vocab == 1000 ? 4.0f : 0.1f;
    std::vector<float> logits = test::random_vec(size_t(vocab), uint64_t(vocab), scale);
    for (int i = 0; i < vocab; i += 97) logits[size_t(i)] = logits[size_t(i / 3)];  // ties
    logits[size_t(vocab / 2)] = -INFINITY;                                          // a masked token
    const float top_value = *std::max_element(logits.begin(), logits.end());
    long double z = 0;
    for (float x : logits) z += std::exp((long double)(x) - (long double)(top_value));
    auto exact = [&](int i) { return double((long double)(logits[size_t(i)]) - top_value - std::log(z)); };
    auto near = [&](float got, int i) {  // -inf for the masked token
      const double want = exact(i);
      return std::isinf(want) ? got == want : std::abs(got - want) < 5e-7 * std::max(1.0, std::abs(want));
    };
    std::vector<int> order(static_cast<size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[size_t(a)] > logits[size_t(b)]; });
    for (int token : {0, vocab / 3, vocab - 1, order[0], order[5]}) {
      INFO("vocab " << vocab << ", token " << token);
      const TokenLogprobs lp = compute_token_logprobs(logits.data(), vocab, token, 20);
      REQUIRE(near(lp.logprob, token));
      const auto above =
          std::count_if(logits.begin(), logits.end(), [&](float x) { return x > logits[size_t(token)]; });
      REQUIRE(lp.rank == 1 + int(above));
      REQUIRE(int(lp.top.size()) == std::min(20, vocab));
      for (size_t r = 0; r < lp.top.size(); ++r) {
        REQUIRE(lp.top[r].first == order[r]);
        REQUIRE(near(lp.top[r].second, order[r]));
      }
    }
  }
}

TEST_CASE("batched logprobs come from the raw logits, before logit_bias", "[sampler]") {
  InputBatch b(4, 16, 1, {kEos});
  SamplingParams plain = greedy(), biased = greedy(), none = greedy();
  plain.logprobs = 2;
  biased.logprobs = 1;
  biased.logit_bias = {{3, 10.0f}};  // token 3 wins the argmax, its logprob stays raw
  b.add_request(request("plain", {0}, {}, plain));
  b.add_request(request("biased", {0}, {}, biased));
  b.add_request(request("none", {0}, {}, none));
  b.refresh_sampling_metadata();
  const std::vector<float> row{1.0f, 3.0f, 3.0f, 0.5f, -2.0f};
  std::vector<float> logits;
  for (int i = 0; i < 3; ++i) logits.insert(logits.end(), row.begin(), row.end());
  Sampler s;
  const std::vector<int> rows{0, 1, 2};
  const std::vector<int64_t> positions{1, 1, 1};
  const SamplerOutput out = s.sample(logits.data(), 5, rows, positions, b.sampling_metadata());
  REQUIRE(out.sampled_token_ids == std::vector<int>{1, 3, 1});
  REQUIRE(out.logprobs[0]);
  REQUIRE(out.logprobs[0]->token == 1);
  REQUIRE(out.logprobs[0]->rank == 1);
  REQUIRE(out.logprobs[0]->top.size() == 2);
  REQUIRE(out.logprobs[0]->top[1].first == 2);
  const TokenLogprobs raw3 = compute_token_logprobs(row.data(), 5, 3, 1);
  REQUIRE(out.logprobs[1]);
  REQUIRE(out.logprobs[1]->token == 3);
  REQUIRE(out.logprobs[1]->rank == 4);
  REQUIRE(out.logprobs[1]->logprob == raw3.logprob);
  REQUIRE(out.logprobs[1]->top == raw3.top);
  REQUIRE_FALSE(out.logprobs[2]);
  REQUIRE(row == std::vector<float>(logits.begin(), logits.begin() + 5));  // the input is left as it was
}

TEST_CASE("penalties follow vLLM's apply_penalties with hand-computed values", "[sampler]") {
  InputBatch b(4, 16, 1);
  SamplingParams p = greedy();
  p.repetition_penalty = 2.0f;
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 0.25f;
  b.add_request(request("r", {0, 1}, {3, 3, 4}, p));
  SamplingParams only_rep = greedy();
  only_rep.repetition_penalty = 0.5f;  // below 1 favours repeats
  b.add_request(request("rep", {0, 1}, {3, 3, 4}, only_rep));
  b.refresh_sampling_metadata();
  const SamplingMetadata& m = b.sampling_metadata();
  const std::vector<float> logits{2.0f, -1.0f, 0.5f, 1.0f, 0.0f, 3.0f};
  Sampler s;
  // Repetition divides positive and multiplies non-positive logits of prompt and output tokens; then
  // token 3 (twice in the output) loses 2 * 0.5 + 0.25 and token 4 (once) 0.5 + 0.25.
  REQUIRE(processed(s, logits, 0, m) == std::vector<float>{1.0f, -2.0f, 0.5f, -0.75f, -0.75f, 3.0f});
  REQUIRE(processed(s, logits, 1, m) == std::vector<float>{4.0f, -0.5f, 0.5f, 2.0f, 0.0f, 3.0f});
  // A token appended to the row is penalized from the next call on, with no rebuild.
  b.append_token(0, 5);
  REQUIRE(processed(s, logits, 0, m) == std::vector<float>{1.0f, -2.0f, 0.5f, -0.75f, -0.75f, 0.75f});
  REQUIRE(b.num_metadata_rebuilds() == 1);
  // Greedy argmax sees the penalized logits: 5 (3.0) loses to 4.0 on the repetition-favoured row.
  const std::vector<int> rows{1};
  const std::vector<int64_t> positions{5};
  REQUIRE(s.sample(logits.data(), 6, rows, positions, m).sampled_token_ids == std::vector<int>{0});
}

TEST_CASE("logit_bias is added to the logits", "[sampler]") {
  InputBatch b(2, 16, 1);
  SamplingParams p = greedy();
  p.logit_bias = {{0, 2.5f}, {4, -100.0f}};
  b.add_request(request("r", {1}, {}, p));
  b.refresh_sampling_metadata();
  const std::vector<float> logits{1.0f, 3.0f, 0.0f, -1.0f, 4.0f};
  Sampler s;
  REQUIRE(processed(s, logits, 0, b.sampling_metadata()) == std::vector<float>{3.5f, 3.0f, 0.0f, -1.0f, -96.0f});
  const std::vector<int> rows{0};
  const std::vector<int64_t> positions{1};
  REQUIRE(s.sample(logits.data(), 5, rows, positions, b.sampling_metadata()).sampled_token_ids[0] == 0);
}

TEST_CASE("min_tokens masks EOS and stop_token_ids until enough tokens are out", "[sampler]") {
  InputBatch b(4, 16, 1, {kEos});
  SamplingParams p = greedy();
  p.min_tokens = 2;
  p.stop_token_ids = {4};
  SamplingParams ignore = p;
  ignore.ignore_eos = true;  // EOS does not stop it, so it is left alone; stop ids still are masked
  b.add_request(request("r", {1}, {}, p));
  b.add_request(request("ignore", {1}, {}, ignore));
  b.refresh_sampling_metadata();
  const SamplingMetadata& m = b.sampling_metadata();
  const std::vector<float> logits{0.0f, 1.0f, 5.0f, 2.0f, 4.0f};
  const float inf = INFINITY;
  Sampler s;
  REQUIRE(processed(s, logits, 0, m) == std::vector<float>{0.0f, 1.0f, -inf, 2.0f, -inf});
  REQUIRE(processed(s, logits, 1, m) == std::vector<float>{0.0f, 1.0f, 5.0f, 2.0f, -inf});
  const std::vector<int> rows{0, 1};
  const std::vector<int64_t> positions{1, 1};
  REQUIRE(s.sample(logits.data(), 5, {rows.data(), 1}, {positions.data(), 1}, m).sampled_token_ids[0] == 3);
  b.append_token(0, 3);
  REQUIRE(processed(s, logits, 0, m)[kEos] == -inf);  // one out, min_tokens is 2
  b.append_token(0, 3);
  REQUIRE(processed(s, logits, 0, m) == logits);  // two out: nothing masked
}

TEST_CASE("rows with no processing sample exactly as Sampler::sample, keyed by (seed, position)", "[sampler]") {
  const int vocab = 50;
  std::vector<SamplingParams> params(4);
  params[0].temperature = 0.8f;
  params[1].temperature = 1.2f, params[1].top_k = 5;
  params[2].temperature = 0.7f, params[2].top_p = 0.6f, params[2].min_p = 0.05f;
  params[3] = greedy();
  InputBatch b(8, 64, 1);
  for (int i = 0; i < 4; ++i) b.add_request(request("r" + std::to_string(i), {1}, {}, params[i], 100 + i));
  b.refresh_sampling_metadata();
  std::vector<float> logits(4 * vocab);
  for (int i = 0; i < int(logits.size()); ++i) logits[i] = float((i * 7919) % 101) / 17.0f;
  Sampler batched, single;
  int differ = 0;
  for (int64_t pos = 1; pos < 200; ++pos) {
    // The rows in reverse order and at their own positions: each row's token depends on itself alone.
    const std::vector<int> rows{3, 2, 1, 0};
    const std::vector<int64_t> positions{pos, pos + 1, pos + 2, pos + 3};
    std::vector<float> reversed;
    for (int r : rows) reversed.insert(reversed.end(), logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
    const SamplerOutput out = batched.sample(reversed.data(), vocab, rows, positions, b.sampling_metadata());
    for (int i = 0; i < 4; ++i) {
      const int r = rows[i];
      REQUIRE(out.sampled_token_ids[i] ==
              single.sample(logits.data() + r * vocab, vocab, params[r], 100 + r, positions[i]));
    }
    differ += out.sampled_token_ids[3] != out.sampled_token_ids[2];
  }
  REQUIRE(differ > 20);  // the random rows really draw
}
