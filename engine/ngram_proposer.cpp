#include "engine/ngram_proposer.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace parley {

NgramProposer::NgramProposer(int min_n, int max_n, int k, int max_model_len)
    : min_n_(min_n), max_n_(max_n), k_(k), max_model_len_(max_model_len) {
  if (min_n < 1 || max_n < min_n || k < 1 || max_model_len < 1)
    throw std::invalid_argument("NgramProposer: need 1 <= min_n <= max_n and k, max_model_len >= 1 (got min_n " +
                                std::to_string(min_n) + ", max_n " + std::to_string(max_n) + ", k " +
                                std::to_string(k) + ")");
}

std::vector<int> NgramProposer::propose(std::span<const int> context) const {
  const int total = int(context.size());
  const int room = std::min(k_, max_model_len_ - total);
  if (room <= 0) return {};
  // Longest first; a plain scan: contexts are at most max_model_len and n at most max_n, so this costs
  // O(max_n * total * n) comparisons, microseconds next to a forward pass.
  for (int n = std::min(max_n_, total - 1); n >= min_n_; --n) {
    const auto suffix = context.subspan(size_t(total - n));
    for (int start = 0; start + n < total; ++start) {  // an earlier occurrence, not the suffix itself
      if (!std::equal(suffix.begin(), suffix.end(), context.begin() + start)) continue;
      const int from = start + n, count = std::min(room, total - from);
      return {context.begin() + from, context.begin() + from + count};
    }
  }
  return {};
}

}  // namespace parley
