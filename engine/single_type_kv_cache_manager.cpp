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

void SingleTypeKVCacheManager::remove_skipped_blocks(const std::string& req_id, int num_computed_tokens) {
  auto it = req_to_blocks_.find(req_id);
  if (window_ == 0 || it == req_to_blocks_.end()) return;
  auto& blocks = it->second;
  const int last = std::min<int>(num_skipped_tokens(num_computed_tokens) / block_size_, int(blocks.size()));
  std::vector<KVCacheBlock*> removed;
  for (int b = last - 1; b >= 0 && blocks[size_t(b)] != pool_.null_block(); --b) {
    removed.push_back(blocks[size_t(b)]);
    blocks[size_t(b)] = pool_.null_block();
  }
  pool_.free_blocks(removed);
}

int SingleTypeKVCacheManager::num_table_entries(const std::string& req_id) const {
  auto it = req_to_blocks_.find(req_id);
  return it == req_to_blocks_.end() ? 0 : int(it->second.size());
}

int SingleTypeKVCacheManager::num_blocks_to_allocate(const std::string& req_id, int num_tokens,
                                                     const std::vector<KVCacheBlock*>& hits) const {
  const int needed = (num_tokens + block_size_ - 1) / block_size_;
  int n = std::max(0, needed - num_table_entries(req_id) - int(hits.size()));
  for (const KVCacheBlock* b : hits) n += b != pool_.null_block() && b->ref_cnt == 0;
  return n;
}

void SingleTypeKVCacheManager::save_hits(const std::string& req_id, const std::vector<KVCacheBlock*>& hits) {
  auto& blocks = req_to_blocks_[req_id];
  std::vector<KVCacheBlock*> real;
  for (KVCacheBlock* b : hits)
    if (b != pool_.null_block()) real.push_back(b);
  pool_.touch(real);
  blocks.insert(blocks.end(), hits.begin(), hits.end());
  int& cached = num_cached_blocks_[req_id];
  cached = std::max(cached, int(hits.size()));  // hits are cached already (or the null block)
}

void SingleTypeKVCacheManager::allocate_new(const std::string& req_id, int num_tokens) {
  auto& blocks = req_to_blocks_[req_id];
  const int needed = (num_tokens + block_size_ - 1) / block_size_;
  auto fresh = pool_.get_new_blocks(std::max(0, needed - int(blocks.size())));
  blocks.insert(blocks.end(), fresh.begin(), fresh.end());
  auto& new_ids = new_block_ids_[req_id];
  for (const KVCacheBlock* b : fresh) new_ids.push_back(b->block_id);
}

void SingleTypeKVCacheManager::cache_blocks(const Request& request, int num_full, int num_hits) {
  const auto& blocks = req_to_blocks_.at(request.request_id);
  int& cached = num_cached_blocks_[request.request_id];
  cached = std::max(cached, num_hits);
  num_full = std::min<int>(num_full, int(blocks.size()));
  if (num_full <= cached) return;
  pool_.cache_full_blocks(blocks, request.block_hashes, cached, num_full, group_);
  cached = num_full;
}

int SingleTypeKVCacheManager::fork(const std::string& parent, const std::string& child, int num_full, bool partial) {
  const auto& pb = req_to_blocks_.at(parent);
  if (int(pb.size()) < num_full + (partial ? 1 : 0)) throw std::logic_error("fork: the parent does not hold its prompt's blocks");
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
  req_to_blocks_[child] = std::move(shared);
  num_cached_blocks_[child] = std::min(num_cached_blocks_[parent], num_full);
  return copy_to;
}

std::vector<KVCacheBlock*> SingleTypeKVCacheManager::take_blocks(const std::string& req_id) {
  std::vector<KVCacheBlock*> out;
  if (auto it = req_to_blocks_.find(req_id); it != req_to_blocks_.end()) {
    for (auto b = it->second.rbegin(); b != it->second.rend(); ++b)
      if (*b != pool_.null_block()) out.push_back(*b);
    req_to_blocks_.erase(it);
  }
  num_cached_blocks_.erase(req_id);
  new_block_ids_.erase(req_id);
  return out;
}

std::vector<int> SingleTypeKVCacheManager::block_ids(const std::string& req_id) const {
  std::vector<int> ids;
  if (auto it = req_to_blocks_.find(req_id); it != req_to_blocks_.end())
    for (const KVCacheBlock* b : it->second) ids.push_back(b->block_id);
  return ids;
}

std::vector<int> SingleTypeKVCacheManager::take_new_block_ids(const std::string& req_id) {
  auto it = new_block_ids_.find(req_id);
  if (it == new_block_ids_.end()) return {};
  std::vector<int> ids = std::move(it->second);
  new_block_ids_.erase(it);
  return ids;
}

int SingleTypeKVCacheManager::max_blocks_held(int num_tokens, int step_tokens) const {
  const int all = (num_tokens + block_size_ - 1) / block_size_;
  if (window_ == 0) return all;
  // The window behind the oldest query of a step, the step itself, and one block each end may straddle.
  return std::min(all, (window_ - 1 + step_tokens + block_size_ - 1) / block_size_ + 2);
}

}  // namespace parley
