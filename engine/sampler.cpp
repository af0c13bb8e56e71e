#include "engine/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "engine/philox.hpp"

namespace parley {

void SamplingParams::validate(int vocab_size) const {
  if (n < 1) throw std::invalid_argument("n must be at least 1, got " + std::to_string(n) + ".");
  if (temperature < 0.0f || !std::isfinite(temperature))
    throw std::invalid_argument("temperature must be non-negative, got " + std::to_string(temperature) + ".");
  if (!(top_p > 0.0f && top_p <= 1.0f))
    throw std::invalid_argument("top_p must be in (0, 1], got " + std::to_string(top_p) + ".");
  if (top_k < -1) throw std::invalid_argument("top_k must be -1 (disable), or at least 1, got " + std::to_string(top_k) + ".");
  if (!(min_p >= 0.0f && min_p <= 1.0f))
    throw std::invalid_argument("min_p must be in [0, 1], got " + std::to_string(min_p) + ".");
  if (max_tokens < 1) throw std::invalid_argument("max_tokens must be at least 1, got " + std::to_string(max_tokens) + ".");
  if (n > 1 && greedy()) throw std::invalid_argument("n must be 1 when using greedy sampling, got " + std::to_string(n) + ".");
}

int argmax(const float* logits, int vocab) {
  int best = 0;
  float best_value = logits[0];  // in a register: no load of logits[best] on the critical path
  for (int i = 1; i < vocab; ++i)
    if (logits[i] > best_value) best_value = logits[i], best = i;
  return best;
}

// Keeps the smallest prefix (in descending order) whose mass reaches top_p of what survived, always the
// top token. Sorting only a growing head is enough: the mass sits in few tokens.
template <class Desc>
void Sampler::apply_top_p(float top_p, int vocab, const Desc& desc) {
  float kept = 0.0f;
  for (float p : probs_) kept += p;
  for (int head = std::min(vocab, 64);; head = head * 16 > vocab ? vocab : head * 4) {
    if (head == vocab) std::sort(order_.begin(), order_.end(), desc);  // past a 16th, sorting all is cheaper
    else std::partial_sort(order_.begin(), order_.begin() + head, order_.end(), desc);
    float cum = 0.0f;
    int r = 0;
    while (r < head && (cum += probs_[order_[r]]) < top_p * kept) ++r;
    if (r < head) {
      keep_.assign(order_.begin(), order_.begin() + r + 1);
      kept_probs_.clear();
      for (int id : keep_) kept_probs_.push_back(probs_[id]);
      std::fill(probs_.begin(), probs_.end(), 0.0f);
      for (size_t i = 0; i < keep_.size(); ++i) probs_[keep_[i]] = kept_probs_[i];
      return;
    }
    if (head == vocab) return;  // rounding kept the cumulative mass below the target: keep everything
  }
}

int Sampler::sample(const float* logits, int vocab, const SamplingParams& params, uint64_t seed, int64_t position) {
  if (params.greedy()) return argmax(logits, vocab);
  // Softmax of logits / temperature, in token-id order (a fixed reduction order).
  probs_.resize(vocab);
  const float inv_t = 1.0f / params.temperature;
  float max_logit = -INFINITY;
  for (int i = 0; i < vocab; ++i) max_logit = std::max(max_logit, logits[i] * inv_t);
  float sum = 0.0f;
  for (int i = 0; i < vocab; ++i) sum += (probs_[i] = std::exp(logits[i] * inv_t - max_logit));
  for (int i = 0; i < vocab; ++i) probs_[i] /= sum;

  if (params.min_p > 0.0f) {
    const float cut = params.min_p * *std::max_element(probs_.begin(), probs_.end());
    for (float& p : probs_)
      if (p < cut) p = 0.0f;
  }
  const bool use_top_k = params.top_k > 0 && params.top_k < vocab;
  if (use_top_k || params.top_p < 1.0f) {
    // Descending by probability, ties by id: a strict order, so the kept set is a function of the row alone.
    const auto desc = [&](int a, int b) { return probs_[a] > probs_[b] || (probs_[a] == probs_[b] && a < b); };
    order_.resize(vocab);
    std::iota(order_.begin(), order_.end(), 0);
    if (use_top_k) {
      std::nth_element(order_.begin(), order_.begin() + (params.top_k - 1), order_.end(), desc);
      const float kth = probs_[order_[params.top_k - 1]];  // ties with the k-th survive, as in vLLM
      for (float& p : probs_)
        if (p < kth) p = 0.0f;
    }
    if (params.top_p < 1.0f) apply_top_p(params.top_p, vocab, desc);
  }
  // Inverse CDF over the surviving mass in id order, with one uniform for (seed, position).
  float total = 0.0f;
  for (float p : probs_) total += p;
  const float target = philox_uniform(seed, uint64_t(position)) * total;
  float cum = 0.0f;
  int last_kept = 0;
  for (int i = 0; i < vocab; ++i) {
    if (probs_[i] <= 0.0f) continue;
    cum += probs_[i];
    last_kept = i;
    if (target < cum) return i;
  }
  return last_kept;  // rounding left target at the very top of the range
}

}  // namespace parley
