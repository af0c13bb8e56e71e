// Paged KV storage: the physical blocks that block tables point into. A block holds one KV group's layers
// (model/kv_cache_layout.hpp): layer l lives in slot slot_of_layer[l] of the blocks its group's table names.
// Which blocks a sequence owns is the block pool's business (engine/block_pool.hpp), not this class's.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/kv_dtype.hpp"
#include "model/kv_cache_layout.hpp"
#include "model/llama_config.hpp"

namespace parley {

class KvCache {
 public:
  // The layout defaults to the model's (KvCacheLayout::for_model).
  KvCache(const LlamaConfig& config, int num_blocks, int block_size, KvDtype dtype = KvDtype::F32);
  KvCache(const LlamaConfig& config, int num_blocks, int block_size, KvDtype dtype, KvCacheLayout layout);

  int num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  KvDtype dtype() const { return dtype_; }
  cpu::KvLayerView layer(int l);
  const KvCacheLayout& layout() const { return layout_; }
  // Copies one block's keys and values in every slot (copy-on-write of a shared partial block).
  void copy_block(int src, int dst);
  // The blocks' keys and values as stored (dtype()'s bytes), slot by slot (keys of every block, then values),
  // for a KV transfer; import_blocks writes such data into other block ids. Throw std::out_of_range for a bad
  // block id and std::invalid_argument when the data does not match the block count.
  std::vector<uint8_t> export_blocks(std::span<const int> block_ids) const;
  void import_blocks(std::span<const int> block_ids, std::span<const uint8_t> data);
  int64_t elements_per_block() const { return int64_t(2) * n_slots_ * block_size_ * kv_dim_; }
  int64_t bytes_per_block() const { return elements_per_block() * kv_dtype_bytes(dtype_); }
  int num_slots() const { return n_slots_; }
  int kv_dim() const { return kv_dim_; }

 private:
  KvCacheLayout layout_;
  int num_blocks_, block_size_, kv_dim_, n_slots_;
  KvDtype dtype_;
  int64_t layer_stride_;  // bytes per slot
  std::vector<uint8_t> keys_, values_;
};

}  // namespace parley
