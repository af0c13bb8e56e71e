// What the pooling tests (embeddings and reranking) share: a small scheduler config and deterministic prompts.
#pragma once
#include <vector>

#include "engine/scheduler.hpp"

namespace parley::pooling_test {

inline SchedulerConfig scheduler_config(PoolingType type, int budget = 512) {
  SchedulerConfig c;
  c.max_model_len = 512;
  c.max_num_batched_tokens = budget;
  c.num_kv_blocks = 64;
  c.block_size = 16;
  c.pooling = type;
  return c;
}

inline std::vector<int> prompt_of(int n, int seed) {
  std::vector<int> p(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) p[size_t(i)] = 1 + (seed * 131 + i * 37) % 500;
  return p;
}

}  // namespace parley::pooling_test
