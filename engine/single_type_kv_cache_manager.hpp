// The blocks of one KV group per request (vLLM v1's SingleTypeKVCacheManager, with FullAttentionManager and
// SlidingWindowManager as its window 0 and window W). Full attention keeps every block a request wrote; a
// sliding window swaps blocks that no later query can see for the pool's null block and gives them back.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "engine/block_pool.hpp"
#include "engine/request.hpp"

namespace parley {

// One request's blocks in one KV group.
struct BlockTable {
  std::vector<KVCacheBlock*> blocks;
  int num_cached = 0;        // entries already registered in the prefix cache
  std::vector<int> new_ids;  // ids of blocks added since the last take_new_block_ids
};

class SingleTypeKVCacheManager {
 public:
  SingleTypeKVCacheManager(BlockPool& pool, int group, int block_size, int sliding_window);

  int sliding_window() const { return window_; }
  // The longest cache hit of at most max_blocks blocks: a prefix (full attention), or (sliding window) a run
  // of cached blocks covering the window before the hit's end, the blocks before it the null block.
  std::vector<KVCacheBlock*> find_longest_cache_hit(std::span<const BlockHash> block_hashes, int max_blocks) const;
  // Sliding window: the table's blocks wholly before the window of a query at position num_computed_tokens
  // go back to the pool (the table names the null block there). Full attention: nothing.
  void remove_skipped_blocks(BlockTable& table, int num_computed_tokens);
  // Blocks the pool must hand out for the table to hold num_tokens tokens with these hits taken (a hit
  // sitting in the free queue counts: touching it takes it out).
  int num_blocks_to_allocate(const BlockTable& table, int num_tokens, const std::vector<KVCacheBlock*>& hits) const;
  // Takes the hits (one more reference each): every group's before any group takes fresh blocks, which
  // could otherwise evict another group's hit from the free queue.
  void save_hits(BlockTable& table, const std::vector<KVCacheBlock*>& hits);
  // Fresh blocks up to num_tokens tokens.
  void allocate_new(BlockTable& table, int num_tokens);
  // Full blocks up to num_full join the prefix cache (num_hits of them were hits, cached already).
  void cache_blocks(BlockTable& table, const Request& request, int num_full, int num_hits);
  // The child's table shares the parent's first num_full blocks; with `partial`, a fresh block for its copy
  // of the partial one is appended and its id returned, else -1.
  int fork(const BlockTable& parent, BlockTable& child, int num_full, bool partial);
  // Every block of the table, tail first (so its prefix stays cached longest), for the pool to free.
  std::vector<KVCacheBlock*> take_blocks(BlockTable& table);
  // The most blocks a request of num_tokens tokens holds at once when a step adds at most step_tokens.
  int max_blocks_held(int num_tokens, int step_tokens) const;

 private:
  int num_skipped_tokens(int num_computed_tokens) const;

  BlockPool& pool_;
  int group_, block_size_, window_;
};

}  // namespace parley
