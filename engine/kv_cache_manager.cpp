#include "engine/kv_cache_manager.hpp"

#include <algorithm>
#include <stdexcept>

namespace parley {

namespace {

bool any_window(const std::vector<int>& windows) {
  return std::any_of(windows.begin(), windows.end(), [](int w) { return w > 0; });
}

}  // namespace

KVCacheManager::KVCacheManager(int num_blocks, int block_size, bool enable_caching, std::vector<int> group_windows)
    : block_size_(block_size), pool_(num_blocks, enable_caching, any_window(group_windows)) {
  if (block_size < 1) throw std::invalid_argument("block_size must be at least 1");
  if (group_windows.empty()) group_windows = {0};
  for (size_t g = 0; g < group_windows.size(); ++g)
    groups_.push_back(std::make_unique<SingleTypeKVCacheManager>(pool_, int(g), block_size, group_windows[g]));
  no_tables_.resize(groups_.size());
}

void KVCacheManager::update_block_hashes(Request& request) const {
  const int full = request.num_tokens() / block_size_;
  for (int b = int(request.block_hashes.size()); b < full; ++b) {
    const BlockHash parent = b == 0 ? NONE_HASH : request.block_hashes[b - 1];
    const std::span<const int> tokens(request.all_token_ids.data() + size_t(b) * block_size_, size_t(block_size_));
    request.block_hashes.push_back(hash_block_tokens(parent, tokens));
  }
}

KVCacheBlocks KVCacheManager::get_computed_blocks(Request& request, int* num_computed_tokens) {
  *num_computed_tokens = 0;
  KVCacheBlocks hits(groups_.size());
  if (!pool_.enable_caching()) return hits;
  update_block_hashes(request);
  // The last token must be computed to get logits: a hit on every token still recomputes the last block.
  int length = (request.num_tokens() - 1) / block_size_;
  // A length every group can resume from: each group's longest hit within the others' (full attention's
  // hits are prefixes, so they shrink with it; a window's must be looked up again).
  for (bool shrunk = true; shrunk;) {
    shrunk = false;
    for (size_t g = 0; g < groups_.size(); ++g) {
      hits[g] = groups_[g]->find_longest_cache_hit(request.block_hashes, length);
      if (int(hits[g].size()) < length) length = int(hits[g].size()), shrunk = true;
    }
  }
  *num_computed_tokens = length * block_size_;
  return hits;
}

void KVCacheManager::remove_skipped_blocks(const Request& request, int num_computed_tokens) {
  if (request.kv_tables) remove_skipped_blocks(request.kv_tables->groups, num_computed_tokens);
}

void KVCacheManager::remove_skipped_blocks(Tables& tables, int num_computed_tokens) {
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g]->remove_skipped_blocks(tables[g], num_computed_tokens);
}

bool KVCacheManager::allocate_slots(Request& request, int num_new_tokens, const KVCacheBlocks& new_computed_blocks,
                                    bool cache_blocks, int num_in_flight_drafts) {
  if (num_new_tokens < 0) throw std::invalid_argument("allocate_slots: negative token count");
  if (!new_computed_blocks.empty() && new_computed_blocks.size() != groups_.size())
    throw std::invalid_argument("allocate_slots: prefix hits for " + std::to_string(new_computed_blocks.size()) +
                                " KV groups, the cache has " + std::to_string(groups_.size()));
  static const std::vector<KVCacheBlock*> no_hits;
  auto hits_of = [&](size_t g) -> const std::vector<KVCacheBlock*>& {
    return new_computed_blocks.empty() ? no_hits : new_computed_blocks[g];
  };
  const int num_hits = int(hits_of(0).size());
  const int num_computed = request.num_computed_tokens + num_hits * block_size_;
  Tables* tables = request.kv_tables ? &request.kv_tables->groups : nullptr;
  const Tables& held = tables ? *tables : no_tables_;
  // Blocks the window left give room first; drafts a verification may reject keep theirs.
  if (tables) remove_skipped_blocks(*tables, request.num_computed_tokens - num_in_flight_drafts);
  int wanted = 0;
  for (size_t g = 0; g < groups_.size(); ++g)
    wanted += groups_[g]->num_blocks_to_allocate(held[g], num_computed + num_new_tokens, hits_of(g));
  if (wanted > pool_.get_num_free_blocks()) return false;
  if (!tables) tables = &tables_of(request);
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g]->save_hits((*tables)[g], hits_of(g));
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g]->allocate_new((*tables)[g], num_computed + num_new_tokens);
  if (pool_.enable_caching() && cache_blocks) {
    // Blocks whose every token is known after this step join the cache; the KV is written in this
    // step, before any later step can hit them.
    update_block_hashes(request);
    const int num_full = std::min(num_computed + num_new_tokens, request.num_tokens()) / block_size_;
    for (size_t g = 0; g < groups_.size(); ++g) groups_[g]->cache_blocks((*tables)[g], request, num_full, num_hits);
  }
  return true;
}

KVCacheManager::Tables& KVCacheManager::tables_of(Request& request) {
  if (!request.kv_tables) {
    RequestBlockTables& entry = tables_[request.request_id];
    entry.groups.resize(groups_.size());
    request.kv_tables = &entry;
  }
  return request.kv_tables->groups;
}

std::optional<std::vector<std::pair<int, int>>> KVCacheManager::fork(const Request& parent, Request& child) {
  const int full = parent.num_prompt_tokens() / block_size_;
  const bool partial = parent.num_prompt_tokens() % block_size_ != 0;
  if (partial && pool_.get_num_free_blocks() < num_groups()) return std::nullopt;
  if (!parent.kv_tables) throw std::logic_error("fork: the parent does not hold its prompt's blocks");
  const Tables& from = parent.kv_tables->groups;  // stays put: unordered_map nodes do not move when the child is added
  Tables& to = tables_of(child);
  to.assign(groups_.size(), {});
  std::vector<std::pair<int, int>> copies;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const int dst = groups_[g]->fork(from[g], to[g], full, partial);
    if (dst >= 0) copies.emplace_back(from[g].blocks[size_t(full)]->block_id, dst);
  }
  return copies;
}

void KVCacheManager::free(Request& request) {
  request.kv_tables = nullptr;  // its entry goes below
  free(request.request_id);
}

void KVCacheManager::free(const std::string& req_id) {
  auto it = tables_.find(req_id);
  if (it == tables_.end()) return;
  for (size_t g = 0; g < groups_.size(); ++g) pool_.free_blocks(groups_[g]->take_blocks(it->second.groups[g]));
  tables_.erase(it);
}

GroupBlockIds KVCacheManager::ids_of(const Tables* tables) const {
  GroupBlockIds ids(groups_.size());
  if (tables)
    for (size_t g = 0; g < groups_.size(); ++g)
      for (const KVCacheBlock* b : (*tables)[g].blocks) ids[g].push_back(b->block_id);
  return ids;
}

GroupBlockIds KVCacheManager::block_ids(const Request& request) const {
  return ids_of(request.kv_tables ? &request.kv_tables->groups : nullptr);
}

GroupBlockIds KVCacheManager::block_ids(const std::string& req_id) const {
  const auto it = tables_.find(req_id);
  return ids_of(it == tables_.end() ? nullptr : &it->second.groups);
}

GroupBlockIds KVCacheManager::take_new_block_ids(Request& request) {
  GroupBlockIds ids;
  if (!request.kv_tables) return ids;
  Tables& tables = request.kv_tables->groups;
  bool any = false;
  for (BlockTable& t : tables) any |= !t.new_ids.empty();
  if (!any) return ids;  // most decode steps: nothing new, and nothing for the step to carry
  for (BlockTable& t : tables) ids.push_back(std::exchange(t.new_ids, {}));
  return ids;
}

int KVCacheManager::max_blocks_held(int num_tokens, int step_tokens) const {
  int n = 0;
  for (const auto& g : groups_) n += g->max_blocks_held(num_tokens, step_tokens);
  return n;
}

std::vector<int> flatten_block_ids(const GroupBlockIds& ids) {
  std::vector<int> flat;
  for (const auto& g : ids) flat.insert(flat.end(), g.begin(), g.end());
  return flat;
}

}  // namespace parley
