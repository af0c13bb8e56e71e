#include "engine/block_pool.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>

namespace parley {

namespace {

std::vector<KVCacheBlock> make_blocks(int num_blocks) {
  if (num_blocks <= 0) throw std::invalid_argument("the block pool needs at least one block");
  std::vector<KVCacheBlock> blocks;
  blocks.reserve(static_cast<size_t>(num_blocks));
  for (int id = 0; id < num_blocks; ++id) blocks.emplace_back(id);
  return blocks;
}

std::string id_of(const KVCacheBlock* b) { return "block " + std::to_string(b->block_id); }

}  // namespace

BlockPool::BlockPool(int num_blocks, bool enable_caching, bool reserve_null_block)
    : num_gpu_blocks_(num_blocks),
      enable_caching_(enable_caching),
      blocks_(make_blocks(num_blocks)),
      free_block_queue_(blocks_) {
  if (!reserve_null_block) return;
  if (num_blocks < 2) throw std::invalid_argument("a block pool with a null block needs at least two blocks");
  null_block_ = free_block_queue_.popleft();  // block 0: the first in the queue
}

bool BlockPool::owns(const KVCacheBlock* block) const {
  // std::less gives a total order even over pointers into different objects.
  const std::less<const KVCacheBlock*> lt;
  return block != nullptr && !lt(block, blocks_.data()) && lt(block, blocks_.data() + blocks_.size());
}

void BlockPool::check_owned(const KVCacheBlock* block, const char* what) const {
  if (!owns(block))
    throw std::logic_error(std::string(what) + ": a block that is not this pool's" + (block ? "" : " (null)"));
  if (block == null_block_) throw std::logic_error(std::string(what) + ": the null block");
}

namespace {

// One hash map serves every KV group: group g > 0 keys its blocks by the hash chained once more on g.
BlockHash group_key(const BlockHash& h, int group) {
  return group == 0 ? h : hash_block_tokens(h, {}, uint64_t(group));
}

}  // namespace

std::vector<KVCacheBlock*> BlockPool::get_new_blocks(int num_blocks) {
  if (num_blocks < 0) throw std::invalid_argument("get_new_blocks: a negative block count");
  if (num_blocks > get_num_free_blocks())
    throw std::runtime_error("out of KV cache blocks: " + std::to_string(num_blocks) + " wanted, " +
                             std::to_string(get_num_free_blocks()) + " free of " + std::to_string(num_gpu_blocks_));
  std::vector<KVCacheBlock*> ret;
  ret.reserve(static_cast<size_t>(num_blocks));
  for (int i = 0; i < num_blocks; ++i) {
    KVCacheBlock* block = free_block_queue_.popleft();
    maybe_evict_cached_block(block);  // its KV is about to be overwritten
    block->ref_cnt = 1;
    ret.push_back(block);
  }
  return ret;
}

bool BlockPool::maybe_evict_cached_block(KVCacheBlock* block) {
  if (!block->block_hash) return false;
  auto it = cached_block_hash_to_block_.find(*block->block_hash);
  if (it == cached_block_hash_to_block_.end())
    throw std::logic_error(id_of(block) + " holds a hash the cache does not map");
  auto& holders = it->second;
  const auto pos = std::find(holders.begin(), holders.end(), block);
  if (pos == holders.end()) throw std::logic_error(id_of(block) + " is missing from the cache entry of its hash");
  holders.erase(pos);
  if (holders.empty()) cached_block_hash_to_block_.erase(it);
  block->block_hash.reset();
  --num_cached_blocks_;
  return true;
}

void BlockPool::free_blocks(const std::vector<KVCacheBlock*>& ordered_blocks) {
  for (const KVCacheBlock* b : ordered_blocks) check_owned(b, "free_blocks");
  // Decrement first, then queue: a block listed twice is judged by its final count, as in vLLM.
  for (size_t i = 0; i < ordered_blocks.size(); ++i) {
    if (--ordered_blocks[i]->ref_cnt < 0) {
      const std::string who = id_of(ordered_blocks[i]);
      for (size_t j = 0; j <= i; ++j) ++ordered_blocks[j]->ref_cnt;  // undo: the pool stays as it was
      throw std::logic_error("free_blocks: " + who + " has no reference left to drop (double free)");
    }
  }
  for (KVCacheBlock* b : ordered_blocks)
    if (b->ref_cnt == 0 && b->prev_free_block == nullptr) free_block_queue_.append(b);
}

void BlockPool::touch(const std::vector<KVCacheBlock*>& blocks) {
  for (const KVCacheBlock* b : blocks) check_owned(b, "touch");
  for (KVCacheBlock* b : blocks) {
    if (b->ref_cnt == 0) free_block_queue_.remove(b);  // no longer a candidate for eviction
    ++b->ref_cnt;
  }
}

KVCacheBlock* BlockPool::get_cached_block(const BlockHash& block_hash, int group) const {
  const auto it = cached_block_hash_to_block_.find(group_key(block_hash, group));
  return it == cached_block_hash_to_block_.end() ? nullptr : it->second.front();
}

void BlockPool::cache_full_blocks(const std::vector<KVCacheBlock*>& blocks, const std::vector<BlockHash>& block_hashes,
                                  int num_cached_blocks, int num_full_blocks, int group) {
  if (num_cached_blocks < 0 || num_cached_blocks > num_full_blocks || size_t(num_full_blocks) > blocks.size() ||
      size_t(num_full_blocks) > block_hashes.size())
    throw std::invalid_argument("cache_full_blocks: blocks [" + std::to_string(num_cached_blocks) + ", " +
                                std::to_string(num_full_blocks) + ") with " + std::to_string(blocks.size()) +
                                " blocks and " + std::to_string(block_hashes.size()) + " hashes");
  if (!enable_caching_) return;
  for (int i = num_cached_blocks; i < num_full_blocks; ++i) {
    const KVCacheBlock* b = blocks[size_t(i)];
    if (b == null_block_ && b) continue;  // a position that left a sliding window
    check_owned(b, "cache_full_blocks");
    if (b->ref_cnt <= 0) throw std::logic_error("cache_full_blocks: " + id_of(b) + " is not referenced");
    if (b->block_hash) throw std::logic_error("cache_full_blocks: " + id_of(b) + " is already cached");
  }
  for (int i = num_cached_blocks; i < num_full_blocks; ++i) {
    KVCacheBlock* b = blocks[size_t(i)];
    if (b == null_block_) continue;
    b->block_hash = group_key(block_hashes[size_t(i)], group);
    cached_block_hash_to_block_[*b->block_hash].push_back(b);
    ++num_cached_blocks_;
  }
}

bool BlockPool::reset_prefix_cache() {
  if (num_used() != 0) return false;  // a running request still reads its blocks
  forget_cached_prefixes();
  return true;
}

void BlockPool::forget_cached_prefixes() {
  cached_block_hash_to_block_.clear();
  for (KVCacheBlock& b : blocks_) b.block_hash.reset();
  num_cached_blocks_ = 0;
}

void BlockPool::check_invariants() const {
  auto fail = [](const std::string& what) { throw std::logic_error("BlockPool invariant: " + what); };
  const size_t n = blocks_.size();
  std::vector<char> in_queue(n, 0);
  for (const KVCacheBlock* b : free_block_queue_.get_all_free_blocks()) {
    if (!owns(b)) fail("the free queue holds a block that is not this pool's");
    if (in_queue[size_t(b->block_id)]) fail(id_of(b) + " is in the free queue twice");
    in_queue[size_t(b->block_id)] = 1;
    if (b->ref_cnt != 0) fail(id_of(b) + " is in the free queue with ref_cnt " + std::to_string(b->ref_cnt));
  }
  int referenced = 0, hashed = 0;
  for (size_t i = 0; i < n; ++i) {
    const KVCacheBlock& b = blocks_[i];
    if (b.block_id != int(i)) fail("the block at index " + std::to_string(i) + " has id " + std::to_string(b.block_id));
    if (&b == null_block_) {
      if (in_queue[i] || b.ref_cnt != 0 || b.block_hash) fail("the null block is in the queue, referenced or cached");
      continue;
    }
    if (!in_queue[i]) {
      if (b.ref_cnt <= 0) fail(id_of(&b) + " is out of the free queue with ref_cnt " + std::to_string(b.ref_cnt));
      if (b.prev_free_block || b.next_free_block) fail(id_of(&b) + " has free-queue links but is not in the queue");
      ++referenced;
    }
    hashed += b.block_hash.has_value();
  }
  if (!enable_caching_ && hashed > 0) fail(std::to_string(hashed) + " blocks hold a hash with caching off");
  std::vector<char> mapped(n, 0);
  int num_mapped = 0;
  for (const auto& [hash, holders] : cached_block_hash_to_block_) {
    if (holders.empty()) fail("the cache maps a hash to no block");
    for (const KVCacheBlock* b : holders) {
      if (!owns(b)) fail("the cache maps a hash to a block that is not this pool's");
      if (b->block_hash != hash) fail("the cache maps a hash to " + id_of(b) + ", which holds another hash or none");
      if (mapped[size_t(b->block_id)]) fail("the cache maps " + id_of(b) + " twice");
      mapped[size_t(b->block_id)] = 1;
      ++num_mapped;
    }
  }
  if (num_mapped != hashed)
    fail(std::to_string(hashed) + " blocks hold a hash but the cache maps " + std::to_string(num_mapped));
  if (num_cached_blocks_ != hashed)
    fail("num_cached_blocks is " + std::to_string(num_cached_blocks_) + " but " + std::to_string(hashed) +
         " blocks hold a hash");
  if (get_num_free_blocks() + referenced != num_usable_blocks())
    fail(std::to_string(get_num_free_blocks()) + " free + " + std::to_string(referenced) +
         " referenced != " + std::to_string(num_usable_blocks()) + " usable blocks");
}

}  // namespace parley
