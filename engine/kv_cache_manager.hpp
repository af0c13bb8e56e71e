// Which blocks each request holds (vLLM v1's KVCacheManager over one full-attention group): prefix-cache
// lookups, slot allocation as a request grows, and freeing. The BlockPool below it does the counting.
#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/block_pool.hpp"
#include "engine/request.hpp"

namespace parley {

struct PrefixCacheStats {
  int64_t queries = 0;  // prompt tokens looked up
  int64_t hits = 0;     // of those, tokens found cached
};

class KVCacheManager {
 public:
  KVCacheManager(int num_blocks, int block_size, bool enable_caching);

  // The longest run of cached full blocks at the start of the request's tokens, and how many tokens
  // they cover. Always leaves at least one token to compute (its logits are needed). Does not take a
  // reference: pass the blocks to allocate_slots in the same step.
  std::vector<KVCacheBlock*> get_computed_blocks(Request& request, int* num_computed_tokens);

  // Gives the request room for num_new_tokens more tokens after its computed ones (and the prefix hits
  // in new_computed_blocks, which it now references). False, changing nothing, if the pool is short.
  // cache_blocks false: full blocks join the prefix cache only on a later call (their KV arrives from elsewhere).
  bool allocate_slots(Request& request, int num_new_tokens, const std::vector<KVCacheBlock*>& new_computed_blocks = {},
                      bool cache_blocks = true);

  // The delayed split: the child shares the parent's full prompt blocks (one more reference each) and gets
  // a fresh block for its copy of the prompt's partial last block. Returns that copy as (src, dst) ids,
  // (-1, -1) when the prompt ends on a block boundary, or nothing (changing nothing) when no block is free.
  std::optional<std::pair<int, int>> fork(const Request& parent, const Request& child);

  // Returns every block of the request to the pool, tail first so its prefix stays cached longest.
  void free(const Request& request) { free(request.request_id); }
  void free(const std::string& req_id);

  // Block ids the request holds, in order.
  std::vector<int> block_ids(const std::string& req_id) const;
  // Blocks added by the last allocate_slots call for this request.
  std::vector<int> take_new_block_ids(const std::string& req_id);
  int num_blocks_needed(int num_tokens) const { return (num_tokens + block_size_ - 1) / block_size_; }

  const BlockPool& block_pool() const { return pool_; }
  BlockPool& block_pool() { return pool_; }
  double usage() const { return pool_.get_usage(); }
  int block_size() const { return block_size_; }
  const PrefixCacheStats& prefix_cache_stats() const { return stats_; }
  // Counts one admitted lookup (a lookup whose allocation failed is retried later and not counted).
  void record_prefix_lookup(int queried_tokens, int hit_tokens) { stats_.queries += queried_tokens, stats_.hits += hit_tokens; }
  int num_requests() const { return int(req_to_blocks_.size()); }

 private:
  void update_block_hashes(Request& request) const;  // hashes of full blocks not hashed yet

  int block_size_;
  BlockPool pool_;
  std::unordered_map<std::string, std::vector<KVCacheBlock*>> req_to_blocks_;
  std::unordered_map<std::string, int> num_cached_blocks_;  // blocks already registered in the cache
  std::unordered_map<std::string, std::vector<int>> new_block_ids_;
  PrefixCacheStats stats_;
};

}  // namespace parley
