#include "engine/single_type_kv_cache_manager.hpp"

#include <algorithm>
#include <stdexcept>

namespace parley {

SingleTypeKVCacheManager::SingleTypeKVCacheManager(BlockPool& pool, int group, int block_size, int sliding_window)
    : pool_(pool), group_(group), block_size_(block_size), window_(sliding_window) {
  if (window_ < 0) throw std::invalid_argument("a KV group's sliding window cannot be negative");
  if (window_ > 0 && !pool_.null_block()) throw std::logic_error("a sliding-window group needs the pool's null block");
}

int SingleTypeKVCacheManager::num_skipped_tokens(int num_computed_tokens) const {
  return window_ > 0 ? std::max(0, num_computed_tokens - window_ + 1) : 0;
}

std::vector<KVCacheBlock*> SingleTypeKVCacheManager::find_longest_cache_hit(std::span<const BlockHash> hashes,
                                                                            int max_blocks) const {
  max_blocks = std::min<int>(max_blocks, int(hashes.size()));
  std::vector<KVCacheBlock*> hit;
  if (window_ == 0) {
    for (int b = 0; b < max_blocks; ++b) {
      KVCacheBlock* block = pool_.get_cached_block(hashes[size_t(b)], group_);
      if (!block) break;
      hit.push_back(block);
    }
    return hit;
  }
  // A query right after the hit sees window - 1 earlier tokens: that many blocks' worth must be cached.
  const int needed = (window_ - 1 + block_size_ - 1) / block_size_;
  hit.assign(size_t(max_blocks), pool_.null_block());
  int run = 0;
  for (int b = max_blocks - 1; b >= 0; --b) {
    KVCacheBlock* block = pool_.get_cached_block(hashes[size_t(b)], group_);
    if (!block) {
      run = 0;
      continue;
    }
    hit[size_t(b)] = block;
    if (++run >= needed) {
      hit.resize(size_t(b + run));
      return hit;
    }
  }
  hit.resize(size_t(run));  // a run from the first block: nothing before it is missing
  return hit;
}

void SingleTypeKVCacheManager::remove_skipped_blocks(BlockTable& table, int num_computed_tokens) {
  if (window_ == 0) return;
  auto& blocks = table.blocks;
  const int last = std::min<int>(num_skipped_tokens(num_computed_tokens) / block_size_, int(blocks.size()));
  std::vector<KVCacheBlock*> removed;
  for (int b = last - 1; b >= 0 && blocks[size_t(b)] != pool_.null_block(); --b) {
    removed.push_back(blocks[size_t(b)]);
    blocks[size_t(b)] = pool_.null_block();
  }
  pool_.free_blocks(removed);
}

int SingleTypeKVCacheManager::num_blocks_to_allocate(const BlockTable& table, int num_tokens,
                                                     const std::vector<KVCacheBlock*>& hits) const {
  const int needed = (num_tokens + block_size_ - 1) / block_size_;
  int n = std::max(0, needed - int(table.blocks.size()) - int(hits.size()));
  for (const KVCacheBlock* b : hits) n += b != pool_.null_block() && b->ref_cnt == 0;
  return n;
}

void SingleTypeKVCacheManager::save_hits(BlockTable& table, const std::vector<KVCacheBlock*>& hits) {
  if (hits.empty()) return;
  std::vector<KVCacheBlock*> real;
  for (KVCacheBlock* b : hits)
    if (b != pool_.null_block()) real.push_back(b);
  pool_.touch(real);
  table.blocks.insert(table.blocks.end(), hits.begin(), hits.end());
  table.num_cached = std::max(table.num_cached, int(hits.size()));  // hits are cached already (or the null block)
}

void SingleTypeKVCacheManager::allocate_new(BlockTable& table, int num_tokens) {
  const int wanted = (num_tokens + block_size_ - 1) / block_size_ - int(table.blocks.size());
  if (wanted <= 0) return;  // most decode steps: the last block has room
  for (KVCacheBlock* b : pool_.get_new_blocks(wanted)) {
    table.blocks.push_back(b);
    table.new_ids.push_back(b->block_id);
  }
}

void SingleTypeKVCacheManager::cache_blocks(BlockTable& table, const Request& request, int num_full, int num_hits) {
  table.num_cached = std::max(table.num_cached, num_hits);
  num_full = std::min<int>(num_full, int(table.blocks.size()));
  if (num_full <= table.num_cached) return;
  pool_.cache_full_blocks(table.blocks, request.block_hashes, table.num_cached, num_full, group_);
  table.num_cached = num_full;
}

int SingleTypeKVCacheManager::fork(const BlockTable& parent, BlockTable& child, int num_full, bool partial) {
  const auto& pb = parent.blocks;
  if (int(pb.size()) < num_full + (partial ? 1 : 0))
    throw std::logic_error("fork: the parent does not hold its prompt's blocks");
  std::vector<KVCacheBlock*> shared(pb.begin(), pb.begin() + num_full), real;
  for (KVCacheBlock* b : shared)
    if (b != pool_.null_block()) real.push_back(b);
  pool_.touch(real);
  int copy_to = -1;
  if (partial) {
    KVCacheBlock* dst = pool_.get_new_blocks(1)[0];
    copy_to = dst->block_id;
    shared.push_back(dst);
  }
  child.blocks = std::move(shared);
  child.num_cached = std::min(parent.num_cached, num_full);
  return copy_to;
}

std::vector<KVCacheBlock*> SingleTypeKVCacheManager::take_blocks(BlockTable& table) {
  std::vector<KVCacheBlock*> out;
  for (auto b = table.blocks.rbegin(); b != table.blocks.rend(); ++b)
    if (*b != pool_.null_block()) out.push_back(*b);
  table = {};
  return out;
}

int SingleTypeKVCacheManager::max_blocks_held(int num_tokens, int step_tokens) const {
  const int all = (num_tokens + block_size_ - 1) / block_size_;
  if (window_ == 0) return all;
  // The window behind the oldest query of a step, the step itself, and one block each end may straddle.
  return std::min(all, (window_ - 1 + step_tokens + block_size_ - 1) / block_size_ + 2);
}

}  // namespace parley
