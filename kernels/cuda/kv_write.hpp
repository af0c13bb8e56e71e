// CUDA KV cache write: one thread per value of each token's key and value rows. A negative slot is a
// padding token of a captured graph's batch: it writes nothing.
#pragma once
#include <cstdint>

#include "kernels/host_device.hpp"

namespace parley::cuda::body {

// i indexes [M][kv_dim]; keys and values are [num_blocks * block_size][kv_dim].
PARLEY_HD inline void kv_write_at(float* keys, float* values, int kv_dim, const float* k, const float* v, const int64_t* slots,
                                  int64_t i) {
  const int64_t m = i / kv_dim, d = i % kv_dim;
  const int64_t slot = slots[m];
  if (slot < 0) return;
  keys[slot * kv_dim + d] = k[i];
  values[slot * kv_dim + d] = v[i];
}

}  // namespace parley::cuda::body
