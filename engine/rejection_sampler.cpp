#include "engine/rejection_sampler.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/philox.hpp"
#include "kernels/cpu/sampling_kernels.hpp"
#include "kernels/sampling_math.hpp"

namespace parley {

VerifyResult verify_exact(std::span<const int> drafts, std::span<const int> target_tokens) {
  if (target_tokens.size() != drafts.size() + 1)
    throw std::invalid_argument("verify_exact: " + std::to_string(drafts.size()) + " drafts need " +
                                std::to_string(drafts.size() + 1) + " target tokens, got " +
                                std::to_string(target_tokens.size()));
  VerifyResult r;
  while (r.num_accepted < int(drafts.size()) && drafts[r.num_accepted] == target_tokens[r.num_accepted])
    ++r.num_accepted;
  r.tokens.assign(target_tokens.begin(), target_tokens.begin() + r.num_accepted + 1);
  return r;
}

int sample_inverse_cdf(std::span<const float> weights, float u) {
  const cpu::SamplingKernels& kernels = cpu::best_sampling_kernels();
  const int n = int(weights.size());
  const float total = kernels.cdf_total(weights.data(), n);
  if (!(total > 0.0f)) throw std::invalid_argument("sample_inverse_cdf: no positive weight");
  const int token = kernels.inverse_cdf(weights.data(), n, u * total);
  // Rounding left the target at the top of the range: the last positive weight.
  return token >= 0 ? token : sampling::last_positive([&](int i) { return weights[size_t(i)]; }, n);
}

RejectionVerdict verify_rejection_at(int d, std::span<const float> p, std::span<const float> q, uint64_t seed,
                                     int64_t position) {
  const bool placeholder = d == kPlaceholderDraft;
  if (!placeholder && (d < 0 || size_t(d) >= p.size()))
    throw std::invalid_argument("verify_rejection: draft out of the vocabulary");
  if (!q.empty() && q.size() != p.size())
    throw std::invalid_argument("verify_rejection: draft and target rows differ in size");
  const float qd = placeholder ? 0.0f : q.empty() ? 1.0f : q[size_t(d)];
  // u < p/q without dividing: accept when u * q < p (q = 0 with p > 0 accepts; a placeholder never does).
  if (!placeholder && philox_uniform(seed, uint64_t(position), 1) * qd < p[size_t(d)]) return {d, true};
  std::vector<float> residual(p.begin(), p.end());
  if (!placeholder) {
    if (q.empty())
      residual[size_t(d)] = 0.0f;
    else
      for (size_t t = 0; t < residual.size(); ++t) residual[t] = std::max(p[t] - q[t], 0.0f);
  }
  return {sample_inverse_cdf(residual, philox_uniform(seed, uint64_t(position), 2)), false};
}

int rejection_bonus(std::span<const float> p, uint64_t seed, int64_t position) {
  return sample_inverse_cdf(p, philox_uniform(seed, uint64_t(position), 0));
}

VerifyResult verify_rejection(std::span<const int> drafts, const std::vector<std::vector<float>>& p,
                              const std::vector<std::vector<float>>& q, uint64_t seed, int64_t first_position) {
  const size_t k = drafts.size();
  if (p.size() != k + 1) throw std::invalid_argument("verify_rejection: k drafts need k + 1 target rows");
  if (!q.empty() && q.size() != k) throw std::invalid_argument("verify_rejection: draft rows must be k or none");
  VerifyResult r;
  for (size_t i = 0; i < k; ++i) {
    const RejectionVerdict v =
        verify_rejection_at(drafts[i], p[i], q.empty() ? std::span<const float>{} : std::span<const float>(q[i]), seed,
                            first_position + int64_t(i));
    r.tokens.push_back(v.token);
    if (!v.accepted) return r;
    ++r.num_accepted;
  }
  r.tokens.push_back(rejection_bonus(p[k], seed, first_position + int64_t(k)));
  return r;
}

}  // namespace parley
