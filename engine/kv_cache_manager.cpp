#include "engine/kv_cache_manager.hpp"

#include <algorithm>
#include <stdexcept>

namespace parley {

KVCacheManager::KVCacheManager(int num_blocks, int block_size, bool enable_caching)
    : block_size_(block_size), pool_(num_blocks, enable_caching) {
  if (block_size < 1) throw std::invalid_argument("block_size must be at least 1");
}

void KVCacheManager::update_block_hashes(Request& request) const {
  const int full = request.num_tokens() / block_size_;
  for (int b = int(request.block_hashes.size()); b < full; ++b) {
    const BlockHash parent = b == 0 ? NONE_HASH : request.block_hashes[b - 1];
    const std::span<const int> tokens(request.all_token_ids.data() + size_t(b) * block_size_, size_t(block_size_));
    request.block_hashes.push_back(hash_block_tokens(parent, tokens));
  }
}

std::vector<KVCacheBlock*> KVCacheManager::get_computed_blocks(Request& request, int* num_computed_tokens) {
  *num_computed_tokens = 0;
  if (!pool_.enable_caching()) return {};
  update_block_hashes(request);
  // The last token must be computed to get logits: a hit on every token still recomputes the last block.
  const int max_hit_blocks = (request.num_tokens() - 1) / block_size_;
  std::vector<KVCacheBlock*> hits;
  for (int b = 0; b < max_hit_blocks; ++b) {
    KVCacheBlock* block = pool_.get_cached_block(request.block_hashes[b]);
    if (!block) break;
    hits.push_back(block);
  }
  *num_computed_tokens = int(hits.size()) * block_size_;
  return hits;
}

bool KVCacheManager::allocate_slots(Request& request, int num_new_tokens,
                                    const std::vector<KVCacheBlock*>& new_computed_blocks, bool cache_blocks) {
  if (num_new_tokens < 0) throw std::invalid_argument("allocate_slots: negative token count");
  auto& blocks = req_to_blocks_[request.request_id];
  const int num_computed = request.num_computed_tokens + int(new_computed_blocks.size()) * block_size_;
  const int needed = num_blocks_needed(num_computed + num_new_tokens);
  const int num_new_blocks = std::max(0, needed - int(blocks.size()) - int(new_computed_blocks.size()));
  // Prefix hits that sit in the free queue stop counting as free once touched.
  int evictable_hits = 0;
  for (const KVCacheBlock* b : new_computed_blocks) evictable_hits += b->ref_cnt == 0;
  if (num_new_blocks > pool_.get_num_free_blocks() - evictable_hits) {
    if (blocks.empty()) req_to_blocks_.erase(request.request_id);
    return false;
  }
  pool_.touch(new_computed_blocks);
  blocks.insert(blocks.end(), new_computed_blocks.begin(), new_computed_blocks.end());
  auto fresh = pool_.get_new_blocks(num_new_blocks);
  blocks.insert(blocks.end(), fresh.begin(), fresh.end());
  auto& new_ids = new_block_ids_[request.request_id];
  for (const KVCacheBlock* b : fresh) new_ids.push_back(b->block_id);
  if (pool_.enable_caching() && cache_blocks) {
    // Blocks whose every token is known after this step join the cache; the KV is written in this
    // step, before any later step can hit them.
    update_block_hashes(request);
    const int num_full = std::min(num_computed + num_new_tokens, request.num_tokens()) / block_size_;
    int& num_cached = num_cached_blocks_[request.request_id];
    num_cached = std::max(num_cached, int(new_computed_blocks.size()));  // prefix hits are cached already
    if (num_full > num_cached) {
      pool_.cache_full_blocks(blocks, request.block_hashes, num_cached, num_full);
      num_cached = num_full;
    }
  }
  return true;
}

std::optional<std::pair<int, int>> KVCacheManager::fork(const Request& parent, const Request& child) {
  const auto& pb = req_to_blocks_.at(parent.request_id);
  const int full = parent.num_prompt_tokens() / block_size_;
  const bool partial = parent.num_prompt_tokens() % block_size_ != 0;
  if (int(pb.size()) < full + (partial ? 1 : 0)) throw std::logic_error("fork: the parent does not hold its prompt's blocks");
  if (partial && pool_.get_num_free_blocks() < 1) return std::nullopt;
  std::vector<KVCacheBlock*> shared(pb.begin(), pb.begin() + full);
  pool_.touch(shared);
  std::pair<int, int> copy{-1, -1};
  if (partial) {
    KVCacheBlock* dst = pool_.get_new_blocks(1)[0];
    copy = {pb[size_t(full)]->block_id, dst->block_id};
    shared.push_back(dst);
  }
  req_to_blocks_[child.request_id] = std::move(shared);
  num_cached_blocks_[child.request_id] = std::min(num_cached_blocks_[parent.request_id], full);
  return copy;
}

void KVCacheManager::free(const std::string& req_id) {
  auto it = req_to_blocks_.find(req_id);
  if (it != req_to_blocks_.end()) {
    pool_.free_blocks({it->second.rbegin(), it->second.rend()});
    req_to_blocks_.erase(it);
  }
  num_cached_blocks_.erase(req_id);
  new_block_ids_.erase(req_id);
}

std::vector<int> KVCacheManager::block_ids(const std::string& req_id) const {
  std::vector<int> ids;
  auto it = req_to_blocks_.find(req_id);
  if (it != req_to_blocks_.end())
    for (const KVCacheBlock* b : it->second) ids.push_back(b->block_id);
  return ids;
}

std::vector<int> KVCacheManager::take_new_block_ids(const std::string& req_id) {
  auto it = new_block_ids_.find(req_id);
  if (it == new_block_ids_.end()) return {};
  std::vector<int> ids = std::move(it->second);
  new_block_ids_.erase(it);
  return ids;
}

}  // namespace parley
