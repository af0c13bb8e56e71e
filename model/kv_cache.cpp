#include "model/kv_cache.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace parley {

KvCache::KvCache(const LlamaConfig& config, int num_blocks, int block_size, KvDtype dtype)
    : KvCache(config, num_blocks, block_size, dtype, KvCacheLayout::for_model(config)) {}

KvCache::KvCache(const LlamaConfig& config, int num_blocks, int block_size, KvDtype dtype, KvCacheLayout layout)
    : layout_(std::move(layout)),
      num_blocks_(num_blocks),
      block_size_(block_size),
      kv_dim_(config.kv_dim()),
      n_slots_(layout_.slots_per_block),
      dtype_(dtype) {
  if (num_blocks <= 0 || block_size <= 0) throw std::invalid_argument("KV cache needs positive block count and size");
  if (int(layout_.slot_of_layer.size()) != config.n_layers)
    throw std::invalid_argument("KV cache layout for " + std::to_string(layout_.slot_of_layer.size()) +
                                " layers, the model has " + std::to_string(config.n_layers));
  layer_stride_ = int64_t(num_blocks) * block_size * kv_dim_ * kv_dtype_bytes(dtype);
  keys_.assign(size_t(layer_stride_) * n_slots_, 0);  // zero bits are 0.0 in every dtype
  values_.assign(size_t(layer_stride_) * n_slots_, 0);
}

cpu::KvLayerView KvCache::layer(int l) {
  const int64_t base = layout_.slot_of_layer.at(size_t(l)) * layer_stride_;
  return {keys_.data() + base, values_.data() + base, block_size_, kv_dim_, dtype_};
}

void KvCache::copy_block(int src, int dst) {
  const int64_t block = int64_t(block_size_) * kv_dim_ * kv_dtype_bytes(dtype_);
  for (int l = 0; l < n_slots_; ++l) {
    const int64_t base = l * layer_stride_;
    std::copy_n(keys_.begin() + base + src * block, block, keys_.begin() + base + dst * block);
    std::copy_n(values_.begin() + base + src * block, block, values_.begin() + base + dst * block);
  }
}

namespace {

void check_ids(std::span<const int> block_ids, int num_blocks) {
  for (int b : block_ids)
    if (b < 0 || b >= num_blocks)
      throw std::out_of_range("KV block " + std::to_string(b) + " outside the cache's " + std::to_string(num_blocks));
}

}  // namespace

std::vector<uint8_t> KvCache::export_blocks(std::span<const int> block_ids) const {
  check_ids(block_ids, num_blocks_);
  const int64_t block = int64_t(block_size_) * kv_dim_ * kv_dtype_bytes(dtype_);
  std::vector<uint8_t> out;
  out.reserve(size_t(bytes_per_block()) * block_ids.size());
  for (int l = 0; l < n_slots_; ++l)
    for (const std::vector<uint8_t>* part : {&keys_, &values_})
      for (int b : block_ids) {
        const auto first = part->begin() + l * layer_stride_ + b * block;
        out.insert(out.end(), first, first + block);
      }
  return out;
}

void KvCache::import_blocks(std::span<const int> block_ids, std::span<const uint8_t> data) {
  check_ids(block_ids, num_blocks_);
  if (int64_t(data.size()) != bytes_per_block() * int64_t(block_ids.size()))
    throw std::invalid_argument("KV data of " + std::to_string(data.size()) + " bytes for " +
                                std::to_string(block_ids.size()) + " blocks of " + std::to_string(bytes_per_block()) +
                                " (" + kv_dtype_name(dtype_) + ")");
  const int64_t block = int64_t(block_size_) * kv_dim_ * kv_dtype_bytes(dtype_);
  auto in = data.begin();
  for (int l = 0; l < n_slots_; ++l)
    for (std::vector<uint8_t>* part : {&keys_, &values_})
      for (int b : block_ids) {
        std::copy_n(in, block, part->begin() + l * layer_stride_ + b * block);
        in += block;
      }
}

}  // namespace parley
