// Helpers for the block pool tests: readable views of a pool, and vLLM's KVCacheManager in miniature.
#pragma once
#include <algorithm>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "engine/block_pool.hpp"

namespace parley::test {

inline std::vector<int> ids(const std::vector<KVCacheBlock*>& blocks) {
  std::vector<int> out;
  for (const KVCacheBlock* b : blocks) out.push_back(b->block_id);
  return out;
}

inline std::vector<int> free_ids(const BlockPool& pool) { return ids(pool.free_block_queue().get_all_free_blocks()); }

inline std::vector<int> refs(const BlockPool& pool) {
  std::vector<int> out;
  for (int i = 0; i < pool.num_blocks(); ++i) out.push_back(pool.block(i).ref_cnt);
  return out;
}

inline std::vector<int> iota_tokens(int n, int first = 0) {
  std::vector<int> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

// Everything observable about a pool, to show that a failed call changed nothing.
struct Snapshot {
  std::vector<int> free_order, ref_cnts;
  std::vector<std::optional<BlockHash>> hashes;
  int num_cached = 0;
  bool operator==(const Snapshot&) const = default;
};

inline Snapshot snapshot(const BlockPool& pool) {
  Snapshot s{free_ids(pool), refs(pool), {}, pool.num_cached_blocks()};
  for (int i = 0; i < pool.num_blocks(); ++i) s.hashes.push_back(pool.block(i).block_hash);
  return s;
}

inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

struct Request {
  explicit Request(std::vector<int> prompt = {}) : tokens(std::move(prompt)) {}
  std::vector<int> tokens;
  std::vector<KVCacheBlock*> blocks;
  int num_cached = 0;  // leading blocks whose hash the pool has recorded
  int num_hits = 0;
};

// vLLM's KVCacheManager in miniature: take the longest cached prefix, allocate the rest, cache the full
// blocks. False, with the pool unchanged, when the blocks do not fit.
inline bool admit(BlockPool& pool, Request& r, int block_size) {
  const std::vector<BlockHash> hashes = hash_request_blocks(r.tokens, block_size);
  std::vector<KVCacheBlock*> hits;
  for (const BlockHash& h : hashes) {
    KVCacheBlock* b = pool.get_cached_block(h);
    if (b == nullptr) break;
    hits.push_back(b);
  }
  const int need = ceil_div(int(r.tokens.size()), block_size) - int(hits.size());
  // A hit that is free leaves the queue when touched, so it cannot also serve as a new block.
  const int free_hits = int(std::count_if(hits.begin(), hits.end(), [](auto* b) { return b->ref_cnt == 0; }));
  if (need > pool.get_num_free_blocks() - free_hits) return false;
  pool.touch(hits);
  r.blocks = hits;
  for (KVCacheBlock* b : pool.get_new_blocks(need)) r.blocks.push_back(b);
  r.num_hits = int(hits.size());
  pool.cache_full_blocks(r.blocks, hashes, r.num_hits, int(hashes.size()));
  r.num_cached = int(hashes.size());
  return true;
}

// Appends tokens (decode); false, with the pool unchanged, when the new blocks do not fit.
inline bool grow(BlockPool& pool, Request& r, const std::vector<int>& more, int block_size) {
  const int need = ceil_div(int(r.tokens.size() + more.size()), block_size) - int(r.blocks.size());
  if (need > pool.get_num_free_blocks()) return false;
  r.tokens.insert(r.tokens.end(), more.begin(), more.end());
  for (KVCacheBlock* b : pool.get_new_blocks(need)) r.blocks.push_back(b);
  const std::vector<BlockHash> hashes = hash_request_blocks(r.tokens, block_size);
  pool.cache_full_blocks(r.blocks, hashes, r.num_cached, int(hashes.size()));
  r.num_cached = int(hashes.size());
  return true;
}

// Tail first, as vLLM frees a request's blocks.
inline void release(BlockPool& pool, Request& r) {
  pool.free_blocks({r.blocks.rbegin(), r.blocks.rend()});
  r.blocks.clear();
  r.num_cached = 0;
}

}  // namespace parley::test
