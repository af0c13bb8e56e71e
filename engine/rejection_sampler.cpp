#include "engine/rejection_sampler.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/philox.hpp"

namespace parley {

VerifyResult verify_exact(std::span<const int> drafts, std::span<const int> target_tokens) {
  if (target_tokens.size() != drafts.size() + 1)
    throw std::invalid_argument("verify_exact: " + std::to_string(drafts.size()) + " drafts need " +
                                std::to_string(drafts.size() + 1) + " target tokens, got " + std::to_string(target_tokens.size()));
  VerifyResult r;
  while (r.num_accepted < int(drafts.size()) && drafts[r.num_accepted] == target_tokens[r.num_accepted]) ++r.num_accepted;
  r.tokens.assign(target_tokens.begin(), target_tokens.begin() + r.num_accepted + 1);
  return r;
}

int sample_inverse_cdf(std::span<const float> weights, float u) {
  float total = 0.0f;
  for (float w : weights) total += std::max(w, 0.0f);
  if (!(total > 0.0f)) throw std::invalid_argument("sample_inverse_cdf: no positive weight");
  const float target = u * total;
  float cum = 0.0f;
  int last = -1;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0.0f) continue;
    cum += weights[i];
    last = int(i);
    if (target < cum) return last;
  }
  return last;  // rounding left target at the very top of the range
}

VerifyResult verify_rejection(std::span<const int> drafts, const std::vector<std::vector<float>>& p,
                              const std::vector<std::vector<float>>& q, uint64_t seed, int64_t first_position) {
  const size_t k = drafts.size();
  if (p.size() != k + 1) throw std::invalid_argument("verify_rejection: k drafts need k + 1 target rows");
  if (!q.empty() && q.size() != k) throw std::invalid_argument("verify_rejection: draft rows must be k or none");
  VerifyResult r;
  std::vector<float> residual;
  for (size_t i = 0; i < k; ++i) {
    const uint64_t pos = uint64_t(first_position) + i;
    const int d = drafts[i];
    const std::vector<float>& pi = p[i];
    const bool placeholder = d == kPlaceholderDraft;
    if (!placeholder && (d < 0 || size_t(d) >= pi.size())) throw std::invalid_argument("verify_rejection: draft out of the vocabulary");
    const float qd = placeholder ? 0.0f : q.empty() ? 1.0f : q[i][size_t(d)];
    // u < p/q without dividing: accept when u * q < p (q = 0 with p > 0 accepts; a placeholder never does).
    if (!placeholder && philox_uniform(seed, pos, 1) * qd < pi[size_t(d)]) {
      r.tokens.push_back(d);
      ++r.num_accepted;
      continue;
    }
    residual = pi;
    if (!placeholder) {
      if (q.empty()) residual[size_t(d)] = 0.0f;
      else for (size_t t = 0; t < residual.size(); ++t) residual[t] = std::max(pi[t] - q[i][t], 0.0f);
    }
    r.tokens.push_back(sample_inverse_cdf(residual, philox_uniform(seed, pos, 2)));
    return r;
  }
  r.tokens.push_back(sample_inverse_cdf(p[k], philox_uniform(seed, uint64_t(first_position) + k, 0)));
  return r;
}

}  // namespace parley
