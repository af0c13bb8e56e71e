// CUDA KV cache write: one thread per value of each token's key and value rows, rounded to the cache's dtype
// (kernels/kv_dtype.hpp). A negative slot is a padding token of a captured graph's batch: it writes nothing.
#pragma once
#include <cstdint>

#include "kernels/host_device.hpp"
#include "kernels/kv_dtype.hpp"

namespace parley::cuda::body {

// i indexes [M][kv_dim]; keys and values are [num_blocks * block_size][kv_dim] of D's element type.
template <KvDtype D>
PARLEY_HD inline void kv_write_at(void* keys, void* values, int kv_dim, const float* k, const float* v,
                                  const int64_t* slots, int64_t i) {
  using E = KvElem<D>;
  const int64_t m = i / kv_dim, d = i % kv_dim;
  const int64_t slot = slots[m];
  if (slot < 0) return;
  E::store(static_cast<typename E::T*>(keys), slot * kv_dim + d, k[i]);
  E::store(static_cast<typename E::T*>(values), slot * kv_dim + d, v[i]);
}

}  // namespace parley::cuda::body
