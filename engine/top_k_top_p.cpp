#include "engine/top_k_top_p.hpp"

#include <algorithm>
#include <bit>

namespace parley {

namespace {

// Ascending keys are weights descending, then ids ascending (weights >= 0: their bits order as their values do).
uint64_t order_key(float weight, int id) { return uint64_t(~std::bit_cast<uint32_t>(weight)) << 32 | uint32_t(id); }
float key_weight(uint64_t key) { return std::bit_cast<float>(~uint32_t(key >> 32)); }

// Bucket 0 holds the largest weights; zeros land in the last (exp_nonpositive never returns a subnormal).
constexpr int kBuckets = 2048;
int weight_bucket(float weight) { return int((~std::bit_cast<uint32_t>(weight) >> 20) & (kBuckets - 1)); }

}  // namespace

void TopKTopP::histogram(std::span<const float> w) {
  count_.assign(kBuckets, 0);
  mass_.assign(kBuckets, 0.0);
  for (float x : w) {
    const int b = weight_bucket(x);
    ++count_[size_t(b)];
    mass_[size_t(b)] += x;
  }
}

std::span<uint64_t> TopKTopP::bucket_keys(std::span<const float> w, int b) {
  if (keys_.size() < w.size()) keys_.resize(w.size());
  size_t n = 0;
  for (size_t i = 0; i < w.size(); ++i) {  // no branch: which weights a bucket holds is as random as the weights
    keys_[n] = order_key(w[i], int(i));
    n += weight_bucket(w[i]) == b;
  }
  return {keys_.data(), n};
}

void TopKTopP::top_k(std::span<float> w, int k) {
  histogram(w);
  int before = 0, b = 0;
  for (; b < kBuckets - 1 && before + count_[size_t(b)] < k; ++b) before += count_[size_t(b)];
  if (b == kBuckets - 1) return;  // fewer than k positive weights
  const std::span<uint64_t> keys = bucket_keys(w, b);
  std::nth_element(keys.begin(), keys.begin() + (k - before - 1), keys.end());
  kernels_.zero_below(w.data(), int(w.size()), key_weight(keys[size_t(k - before - 1)]));
}

void TopKTopP::top_p(std::span<float> w, float top_p) {
  const double target = top_p * kernels_.cdf_total(w.data(), int(w.size()));
  histogram(w);
  double cum = 0.0;  // in double: the kept mass within rounding of the float target, over any vocabulary
  int b = 0;
  for (; b < kBuckets - 1 && cum + mass_[size_t(b)] < target; ++b) cum += mass_[size_t(b)];
  if (b == kBuckets - 1) return;  // rounding kept the mass of all below the target: keep everything
  const std::span<uint64_t> keys = bucket_keys(w, b);
  if (keys.empty()) return;  // a row of zeros
  std::sort(keys.begin(), keys.end());
  size_t r = 0;
  while (r + 1 < keys.size() && (cum += key_weight(keys[r])) < target) ++r;
  const float last = key_weight(keys[r]);
  kernels_.zero_below(w.data(), int(w.size()), last);
  for (size_t j = r + 1; j < keys.size() && key_weight(keys[j]) == last; ++j) w[uint32_t(keys[j])] = 0.0f;  // ties
}

}  // namespace parley
