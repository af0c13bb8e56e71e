// Which blocks each request holds (vLLM v1's KVCacheManager with its KV cache coordinator): one block table
// per KV group (model/kv_cache_layout.hpp), all drawing from one BlockPool. Prefix-cache lookups find the
// longest hit every group can resume from; slots are allocated in every group as a request grows; a
// sliding-window group returns blocks that left its window. One full-attention group is the plain case.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/block_pool.hpp"
#include "engine/request.hpp"
#include "engine/single_type_kv_cache_manager.hpp"

namespace parley {

struct PrefixCacheStats {
  int64_t queries = 0;  // prompt tokens looked up
  int64_t hits = 0;     // of those, tokens found cached
};

// Blocks per KV group, in group order (vLLM's KVCacheBlocks).
using KVCacheBlocks = std::vector<std::vector<KVCacheBlock*>>;

// A request's block table in every KV group; the request points at its own (Request::kv_tables).
struct RequestBlockTables {
  std::vector<BlockTable> groups;
};

class KVCacheManager {
 public:
  // group_windows[g]: group g's sliding window, 0 for full attention (empty: one full-attention group).
  KVCacheManager(int num_blocks, int block_size, bool enable_caching, std::vector<int> group_windows = {});

  // The longest cache hit at the start of the request's tokens, and how many tokens it covers. Always leaves
  // at least one token to compute (its logits are needed). Takes no reference: pass the blocks to
  // allocate_slots in the same step.
  KVCacheBlocks get_computed_blocks(Request& request, int* num_computed_tokens);

  // Gives the request room for num_new_tokens more tokens after its computed ones (and the prefix hits
  // in new_computed_blocks, which it now references). False, changing nothing but returning blocks that
  // left a window, if the pool is short. num_in_flight_drafts: drafts counted in num_computed_tokens that
  // a verification may still reject (their window is kept).
  // cache_blocks false: full blocks join the prefix cache only on a later call (their KV arrives from elsewhere).
  bool allocate_slots(Request& request, int num_new_tokens, const KVCacheBlocks& new_computed_blocks = {},
                      bool cache_blocks = true, int num_in_flight_drafts = 0);
  // Returns the blocks no query from position num_computed_tokens on can see (sliding-window groups).
  void remove_skipped_blocks(const Request& request, int num_computed_tokens);

  // The delayed split: the child shares the parent's full prompt blocks (one more reference each) and gets,
  // per group, a fresh block for its copy of the prompt's partial last block. Returns those copies as
  // (src, dst) ids (none when the prompt ends on a block boundary), or nothing (changing nothing) when the
  // pool is short.
  std::optional<std::vector<std::pair<int, int>>> fork(const Request& parent, Request& child);

  // Returns every block of the request to the pool, tail first so its prefix stays cached longest. By id: blocks
  // kept after their request ended (held for a KV transfer).
  void free(Request& request);
  void free(const std::string& req_id);

  // Block ids the request holds per group, in order (the null block where a window skipped).
  GroupBlockIds block_ids(const Request& request) const;
  GroupBlockIds block_ids(const std::string& req_id) const;
  // Blocks added per group by the last allocate_slots call for this request.
  GroupBlockIds take_new_block_ids(Request& request);
  int num_groups() const { return int(groups_.size()); }
  // Blocks of one group's table that num_tokens tokens fill.
  int num_blocks_needed(int num_tokens) const { return (num_tokens + block_size_ - 1) / block_size_; }
  // The most blocks a request of num_tokens tokens holds at once, every group together.
  int max_blocks_held(int num_tokens, int step_tokens) const;

  const BlockPool& block_pool() const { return pool_; }
  BlockPool& block_pool() { return pool_; }
  double usage() const { return pool_.get_usage(); }
  int block_size() const { return block_size_; }
  const PrefixCacheStats& prefix_cache_stats() const { return stats_; }
  // Counts one admitted lookup (a lookup whose allocation failed is retried later and not counted).
  void record_prefix_lookup(int queried_tokens, int hit_tokens) {
    stats_.queries += queried_tokens, stats_.hits += hit_tokens;
  }
  int num_requests() const { return int(tables_.size()); }

 private:
  using Tables = std::vector<BlockTable>;            // one per KV group
  void update_block_hashes(Request& request) const;  // hashes of full blocks not hashed yet
  void remove_skipped_blocks(Tables& tables, int num_computed_tokens);
  // The request's tables, made (empty) when it holds none yet.
  Tables& tables_of(Request& request);
  GroupBlockIds ids_of(const Tables* tables) const;

  int block_size_;
  BlockPool pool_;
  std::vector<std::unique_ptr<SingleTypeKVCacheManager>> groups_;
  // Per id holding blocks, its tables (nodes stay put: requests point at theirs).
  std::unordered_map<std::string, RequestBlockTables> tables_;
  Tables no_tables_;  // empty tables, for a request holding nothing yet

  PrefixCacheStats stats_;
};

// The groups' ids one after another (group 0's, then group 1's...): a KV transfer's block order.
std::vector<int> flatten_block_ids(const GroupBlockIds& ids);

}  // namespace parley
