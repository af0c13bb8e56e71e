// The pool of KV cache blocks with prefix caching (vLLM v1's vllm/v1/core/block_pool.py).
// A block is either referenced (ref_cnt > 0, out of the free queue) or free (ref_cnt 0, in the queue).
// A free block may still hold a cached full block: a later request can take it back with touch() until
// get_new_blocks() pops it from the front of the queue and evicts its hash. Pure logic, no device code.
#pragma once
#include <unordered_map>
#include <vector>

#include "engine/kv_cache_utils.hpp"

namespace parley {

class BlockPool {
 public:
  // reserve_null_block: block 0 never leaves the pool's hands; block tables of sliding-window groups name it
  // for positions that left the window (vLLM's null block). It is neither free nor used.
  BlockPool(int num_blocks, bool enable_caching, bool reserve_null_block = false);
  // Blocks and the free queue point at each other: the pool stays where it was built.
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // n blocks off the front of the free queue, each with ref_cnt 1 and no hash (a cached block popped
  // here is evicted first). Throws std::runtime_error when fewer than n are free, changing nothing.
  std::vector<KVCacheBlock*> get_new_blocks(int num_blocks);
  // Drops one reference from each; blocks reaching 0 join the back of the free queue in the given
  // order. Callers pass a sequence's blocks tail first, so its tail is evicted before its prefix.
  // Throws std::logic_error (changing nothing) for a block with no reference or not of this pool.
  void free_blocks(const std::vector<KVCacheBlock*>& ordered_blocks);
  // Cache hits: one more reference each; a block that had none leaves the free queue.
  void touch(const std::vector<KVCacheBlock*>& blocks);
  // A cached block of this KV group holding this prefix, or nullptr (always nullptr with caching off).
  KVCacheBlock* get_cached_block(const BlockHash& block_hash, int group = 0) const;
  // Records block_hashes[i] for blocks[i], i in [num_cached_blocks, num_full_blocks): the blocks of one
  // request that became full since the last call, in one KV group (null blocks are skipped). A no-op with caching off.
  void cache_full_blocks(const std::vector<KVCacheBlock*>& blocks, const std::vector<BlockHash>& block_hashes,
                         int num_cached_blocks, int num_full_blocks, int group = 0);
  // Forgets every cached hash, referenced blocks' too: after a lost step, blocks cached when it was planned may
  // never have been written.
  void forget_cached_prefixes();
  // Forgets every cached hash; refused (false) while any block is referenced, as vLLM does.
  bool reset_prefix_cache();

  int get_num_free_blocks() const { return free_block_queue_.num_free_blocks(); }
  // Fraction of usable blocks referenced (vLLM's kv_cache_usage): cached free blocks count as free.
  double get_usage() const { return 1.0 - double(get_num_free_blocks()) / double(num_usable_blocks()); }
  int num_blocks() const { return num_gpu_blocks_; }  // block ids are [0, num_blocks)
  int num_usable_blocks() const { return num_gpu_blocks_ - (null_block_ ? 1 : 0); }
  int num_used() const { return num_usable_blocks() - get_num_free_blocks(); }
  KVCacheBlock* null_block() const { return null_block_; }  // nullptr unless reserved
  // Blocks that hold a cached hash, referenced or not.
  int num_cached_blocks() const { return num_cached_blocks_; }
  bool enable_caching() const { return enable_caching_; }
  KVCacheBlock& block(int block_id) { return blocks_.at(static_cast<size_t>(block_id)); }
  const KVCacheBlock& block(int block_id) const { return blocks_.at(static_cast<size_t>(block_id)); }
  const FreeKVCacheBlockQueue& free_block_queue() const { return free_block_queue_; }

  // Throws std::logic_error naming the first broken invariant; for tests and debug builds.
  void check_invariants() const;

 private:
  bool owns(const KVCacheBlock* block) const;
  void check_owned(const KVCacheBlock* block, const char* what) const;
  // Removes the block's hash from the cache; false if it had none (vLLM's _maybe_evict_cached_block).
  bool maybe_evict_cached_block(KVCacheBlock* block);

  int num_gpu_blocks_;
  bool enable_caching_;
  KVCacheBlock* null_block_ = nullptr;
  std::vector<KVCacheBlock> blocks_;  // never resized: the queue and the map hold pointers into it
  FreeKVCacheBlockQueue free_block_queue_;
  // Several blocks can hold the same prefix (two requests filled it before either was cached);
  // lookups return the first cached, as vLLM's dict does.
  std::unordered_map<BlockHash, std::vector<KVCacheBlock*>> cached_block_hash_to_block_;
  int num_cached_blocks_ = 0;
};

}  // namespace parley
