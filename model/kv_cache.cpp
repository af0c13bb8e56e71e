#include "model/kv_cache.hpp"

#include <algorithm>
#include <stdexcept>

namespace parley {

KvCache::KvCache(const LlamaConfig& config, int num_blocks, int block_size)
    : num_blocks_(num_blocks), block_size_(block_size), kv_dim_(config.kv_dim()), n_layers_(config.n_layers) {
  if (num_blocks <= 0 || block_size <= 0) throw std::invalid_argument("KV cache needs positive block count and size");
  layer_stride_ = int64_t(num_blocks) * block_size * kv_dim_;
  keys_.assign(size_t(layer_stride_) * n_layers_, 0.0f);
  values_.assign(size_t(layer_stride_) * n_layers_, 0.0f);
}

cpu::KvLayerView KvCache::layer(int l) {
  return {keys_.data() + l * layer_stride_, values_.data() + l * layer_stride_, block_size_, kv_dim_};
}

void KvCache::copy_block(int src, int dst) {
  const int64_t block = int64_t(block_size_) * kv_dim_;
  for (int l = 0; l < n_layers_; ++l) {
    const int64_t base = l * layer_stride_;
    std::copy_n(keys_.begin() + base + src * block, block, keys_.begin() + base + dst * block);
    std::copy_n(values_.begin() + base + src * block, block, values_.begin() + base + dst * block);
  }
}

}  // namespace parley
