#include "engine/sampler.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/philox.hpp"
#include "engine/rejection_sampler.hpp"
#include "engine/structured_output/compiled_grammar.hpp"
#include "kernels/sampling_math.hpp"

namespace parley {

namespace {

// The shortest text that reads back as the same float, as Python prints it in vLLM's messages.
std::string fmt(float v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// "[3, 9]": the ids of `ids` outside [0, vocab_size) (any negative id when vocab_size is 0).
template <class Ids, class IdOf>
std::string out_of_vocab(const Ids& ids, int vocab_size, IdOf id_of) {
  std::string list;
  for (const auto& x : ids) {
    const int id = id_of(x);
    if (id < 0 || (vocab_size > 0 && id >= vocab_size)) list += (list.empty() ? "" : ", ") + std::to_string(id);
  }
  return list.empty() ? list : "[" + list + "]";
}

constexpr int kScanBlock = 16;  // fixed-length inner loops, which -O2 turns into vector compares

// How many of x[0, n) are greater than v.
int count_above(const float* x, int n, float v) {
  int above = 0, i = 0;
  for (; i + kScanBlock <= n; i += kScanBlock)
    for (int j = 0; j < kScanBlock; ++j) above += x[i + j] > v;
  for (; i < n; ++i) above += x[i] > v;
  return above;
}

// The ids of the k largest values, descending, ties by the lower id (a full sort's first k; NaNs never), in one
// pass: a sorted list of k, and blocks of 16 skipped whole when none of theirs beats the list's last.
std::vector<int> top_ids(const float* x, int n, int k) {
  std::vector<int> top;
  if (k <= 0) return top;
  top.reserve(size_t(k) + 1);
  auto offer = [&](int i) {
    if (std::isnan(x[i]) || (int(top.size()) == k && !(x[i] > x[top.back()]))) return;
    // After every kept value at or above x[i]: among equals the lower id, seen first, stays first.
    top.insert(std::upper_bound(top.begin(), top.end(), i, [&](int a, int b) { return x[a] > x[b]; }), i);
    if (int(top.size()) > k) top.pop_back();
  };
  int i = 0;
  for (; i + kScanBlock <= n; i += kScanBlock) {
    if (int(top.size()) == k && count_above(x + i, kScanBlock, x[top.back()]) == 0) continue;
    for (int j = 0; j < kScanBlock; ++j) offer(i + j);
  }
  for (; i < n; ++i) offer(i);
  return top;
}

}  // namespace

void SamplingParams::validate(int vocab_size) const {
  auto fail = [](const std::string& message) { throw std::invalid_argument(message); };
  for_each_out_of_range(*this, true, [&](const auto& field, auto value) {
    if constexpr (std::is_floating_point_v<decltype(value)>)
      fail(field.range.message(field.name, fmt(value)));
    else
      fail(field.range.message(field.name, std::to_string(value)));
  });
  if (min_tokens > max_tokens)
    fail("min_tokens must be less than or equal to max_tokens=" + std::to_string(max_tokens) + ", got " +
         std::to_string(min_tokens) + ".");
  if (logprobs && *logprobs < 0) fail("logprobs must be non-negative, got " + std::to_string(*logprobs) + ".");
  if (logprobs && *logprobs > kMaxLogprobs)
    fail("Requested sample logprobs of " + std::to_string(*logprobs) +
         ", which is greater than max allowed: " + std::to_string(kMaxLogprobs));
  if (prompt_logprobs && *prompt_logprobs < 0)
    fail("prompt_logprobs must be non-negative, got " + std::to_string(*prompt_logprobs) + ".");
  if (prompt_logprobs && *prompt_logprobs > kMaxLogprobs)
    fail("Requested prompt logprobs of " + std::to_string(*prompt_logprobs) +
         ", which is greater than max allowed: " + std::to_string(kMaxLogprobs));
  for (const auto& [token, bias] : logit_bias)
    if (!(bias >= -100.0f && bias <= 100.0f))
      fail("logit_bias must be in [-100, 100], got " + fmt(bias) + " for token " + std::to_string(token) + ".");
  const std::string bad_bias = out_of_vocab(logit_bias, vocab_size, [](const auto& b) { return b.first; });
  if (!bad_bias.empty())
    fail("token_id(s) " + bad_bias +
         " in logit_bias contain out-of-vocab token ids. Vocabulary size: " + std::to_string(vocab_size));
  const std::string bad_stop = out_of_vocab(stop_token_ids, vocab_size, [](int t) { return t; });
  if (!bad_stop.empty())
    fail("token_id(s) " + bad_stop +
         " in stop_token_ids contain out-of-vocab token ids. Vocabulary size: " + std::to_string(vocab_size));
  if (n > 1 && greedy()) fail("n must be 1 when using greedy sampling, got " + std::to_string(n) + ".");
}

int argmax(const float* logits, int vocab) { return cpu::best_sampling_kernels().argmax(logits, vocab); }

int Sampler::sample(const float* logits, int vocab, const SamplingParams& params, uint64_t seed, int64_t position) {
  return sample_filtered(logits, vocab, {params.temperature, params.top_p, params.min_p, params.top_k}, seed, position);
}

int Sampler::sample_filtered(const float* logits, int vocab, const Filters& params, uint64_t seed, int64_t position) {
  if (params.temperature < 1e-5f) return kernels_.argmax(logits, vocab);  // SamplingParams::greedy()
  filter_probs(logits, vocab, params);
  // Inverse CDF over the surviving mass in id order, with one uniform for (seed, position).
  return sample_inverse_cdf(probs_, philox_uniform(seed, uint64_t(position)));
}

std::vector<float> Sampler::target_probs(const float* logits, int vocab, int row, const SamplingMetadata& m) {
  const Filters f{m.temperature[row], m.top_p[row], m.min_p[row], m.top_k[row]};
  if (f.temperature < 1e-5f)
    throw std::invalid_argument("Sampler::target_probs: a greedy row has no distribution to sample");
  filter_probs(process_logits(logits, vocab, row, m), vocab, f);
  const float total = kernels_.cdf_total(probs_.data(), vocab);
  std::vector<float> p(probs_);
  for (float& x : p) x /= total;
  return p;
}

void Sampler::filter_probs(const float* logits, int vocab, const Filters& params) {
  // The softmax of logits / temperature, unnormalized: e^(logit / T - max), the top token's weight exactly 1
  // (the largest scaled logit is the largest logit scaled: rounding keeps the order). The draw scales by the mass.
  probs_.resize(vocab);
  const float inv_t = 1.0f / params.temperature;
  kernels_.exp_scaled(logits, vocab, inv_t, kernels_.max_value(logits, vocab) * inv_t, probs_.data());
  if (params.min_p > 0.0f) kernels_.zero_below(probs_.data(), vocab, params.min_p);  // min_p times the top weight, 1
  if (params.top_k > 0 && params.top_k < vocab) cuts_.top_k(probs_, params.top_k);
  if (params.top_p < 1.0f) cuts_.top_p(probs_, params.top_p);
}

TokenLogprobs compute_token_logprobs(const float* logits, int vocab, int token, int num_top) {
  const cpu::SamplingKernels& kernels = cpu::best_sampling_kernels();
  thread_local std::vector<float> weights;
  // log_softmax in id order: (x - max) - log(sum e^(x - max)), the sum by blocks of 16 added in double.
  const float max_logit = kernels.max_value(logits, vocab);
  weights.resize(size_t(vocab));
  kernels.exp_scaled(logits, vocab, 1.0f, max_logit, weights.data());
  const float log_sum = float(std::log(kernels.cdf_total_double(weights.data(), vocab)));
  auto logprob = [&](int i) { return (logits[i] - max_logit) - log_sum; };
  TokenLogprobs out;
  out.token = token;
  out.logprob = logprob(token);
  // Ranks and order compare the raw logits: two logits never tie after rounding when they differ.
  out.rank = 1 + count_above(logits, vocab, logits[token]);
  for (int id : top_ids(logits, vocab, std::min(num_top, vocab))) out.top.emplace_back(id, logprob(id));
  return out;
}

// vLLM's apply_penalties: repetition over prompt and output tokens, then frequency and presence over the output.
void Sampler::apply_penalties(float* logits, std::span<const int> prompt, std::span<const int> output, float presence,
                              float frequency, float repetition) {
  touched_.clear();
  if (repetition != 1.0f) {
    for (auto tokens : {prompt, output})
      for (int t : tokens) {
        if (counts_[t]) continue;
        counts_[t] = 1;
        touched_.push_back(t);
        logits[t] = logits[t] > 0.0f ? logits[t] / repetition : logits[t] * repetition;
      }
    for (int t : touched_) counts_[t] = 0;
    touched_.clear();
  }
  if (frequency == 0.0f && presence == 0.0f) return;
  for (int t : output)
    if (counts_[t]++ == 0) touched_.push_back(t);
  for (int t : touched_) {
    logits[t] -= frequency * float(counts_[t]);
    logits[t] -= presence;
    counts_[t] = 0;
  }
}

bool Sampler::plain_row(int row, const SamplingMetadata& m) {
  const std::vector<int>* stop_ids = m.min_tokens_stop_ids[row];
  const bool under_min_tokens = stop_ids && int(m.output_token_ids(row).size()) < m.min_tokens[row];
  return m.device_can_sample[row] && !under_min_tokens;
}

const float* Sampler::process_logits(const float* logits, int vocab, int row, const SamplingMetadata& m) {
  if (row < 0 || row >= m.num_reqs())
    throw std::out_of_range("Sampler: batch row " + std::to_string(row) + " has no metadata");
  structured::StructuredOutputGrammar* grammar = m.grammars[row];
  if (grammar) grammar->sync(m.output_token_ids(row));
  const std::vector<int>* stop_ids = m.min_tokens_stop_ids[row];
  // A grammar that is complete leaves only the end tokens: it outranks min_tokens.
  const bool under_min_tokens =
      stop_ids && int(m.output_token_ids(row).size()) < m.min_tokens[row] && !(grammar && grammar->is_terminated());
  const auto* bias = m.logit_bias[row];
  const float presence = m.presence_penalties[row], frequency = m.frequency_penalties[row];
  const float repetition = m.repetition_penalties[row];
  const bool penalize = presence != 0.0f || frequency != 0.0f || repetition != 1.0f;
  if (!under_min_tokens && !bias && !penalize && !grammar) return logits;
  processed_.assign(logits, logits + vocab);
  if (under_min_tokens)
    for (int id : *stop_ids)
      if (id >= 0 && id < vocab) processed_[id] = -INFINITY;
  if (bias)
    for (const auto& [id, b] : *bias)
      if (id >= 0 && id < vocab) processed_[id] += b;
  if (penalize) {
    counts_.resize(vocab, 0);
    apply_penalties(processed_.data(), m.prompt_token_ids(row), m.output_token_ids(row), presence, frequency,
                    repetition);
  }
  if (grammar) grammar->apply_mask(processed_.data(), vocab);  // last: no bias brings a forbidden token back
  return processed_.data();
}

SamplerOutput Sampler::sample(const float* logits, int vocab, std::span<const int> batch_rows,
                              std::span<const int64_t> positions, const SamplingMetadata& m) {
  if (batch_rows.size() != positions.size()) throw std::invalid_argument("Sampler: one position per row");
  SamplerOutput out;
  out.sampled_token_ids.resize(batch_rows.size());
  out.logprobs.resize(batch_rows.size());
  for (size_t i = 0; i < batch_rows.size(); ++i) {
    const int row = batch_rows[i];
    const float* raw = logits + i * size_t(vocab);
    const float* processed = process_logits(raw, vocab, row, m);
    const Filters f{m.temperature[row], m.top_p[row], m.min_p[row], m.top_k[row]};
    const int token = sample_filtered(processed, vocab, f, m.seeds[row], positions[i]);
    out.sampled_token_ids[i] = token;
    if (m.num_logprobs[row] >= 0) out.logprobs[i] = compute_token_logprobs(raw, vocab, token, m.num_logprobs[row]);
  }
  return out;
}

std::vector<int> Sampler::sample_children(const float* logits, int vocab, int row, int64_t position,
                                          const SamplingMetadata& m, std::span<const uint64_t> seeds) {
  const float* processed = process_logits(logits, vocab, row, m);
  const Filters f{m.temperature[row], m.top_p[row], m.min_p[row], m.top_k[row]};
  std::vector<int> tokens;
  for (uint64_t seed : seeds) tokens.push_back(sample_filtered(processed, vocab, f, seed, position));
  return tokens;
}

}  // namespace parley
