#include "engine/kv_cache_utils.hpp"

#include <xxhash.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace parley {

namespace {

// Fixed-size fields first, tokens last: the input length then fixes the token count, so no two
// different (parent, extra, tokens) triples serialize to the same bytes.
BlockHash hash_into(std::vector<unsigned char>& buf, const BlockHash& parent, std::span<const int> tokens,
                    uint64_t extra) {
  const uint64_t head[3] = {parent.lo, parent.hi, extra};
  buf.resize(sizeof head + tokens.size_bytes());
  std::memcpy(buf.data(), head, sizeof head);
  if (!tokens.empty()) std::memcpy(buf.data() + sizeof head, tokens.data(), tokens.size_bytes());
  const XXH128_hash_t h = XXH3_128bits(buf.data(), buf.size());
  return BlockHash{h.low64, h.high64};
}

}  // namespace

BlockHash hash_block_tokens(const BlockHash& parent_block_hash, std::span<const int> curr_block_token_ids,
                            uint64_t extra) {
  std::vector<unsigned char> buf;
  return hash_into(buf, parent_block_hash, curr_block_token_ids, extra);
}

std::vector<BlockHash> hash_request_blocks(const std::vector<int>& token_ids, int block_size, uint64_t extra) {
  if (block_size < 1) throw std::invalid_argument("block_size must be at least 1");
  const size_t bs = static_cast<size_t>(block_size);
  std::vector<BlockHash> hashes;
  hashes.reserve(token_ids.size() / bs);
  std::vector<unsigned char> buf;  // reused across blocks
  BlockHash parent = NONE_HASH;
  for (size_t start = 0; start + bs <= token_ids.size(); start += bs) {
    parent = hash_into(buf, parent, std::span<const int>(token_ids.data() + start, bs), extra);
    hashes.push_back(parent);
  }
  return hashes;
}

FreeKVCacheBlockQueue::FreeKVCacheBlockQueue(std::span<KVCacheBlock> blocks)
    : num_free_blocks_(static_cast<int>(blocks.size())) {
  KVCacheBlock* prev = &fake_free_list_head_;
  for (KVCacheBlock& b : blocks) {
    prev->next_free_block = &b;
    b.prev_free_block = prev;
    prev = &b;
  }
  prev->next_free_block = &fake_free_list_tail_;
  fake_free_list_tail_.prev_free_block = prev;
}

KVCacheBlock* FreeKVCacheBlockQueue::popleft() {
  if (num_free_blocks_ == 0) throw std::runtime_error("No free blocks available");
  KVCacheBlock* first = fake_free_list_head_.next_free_block;
  remove(first);
  return first;
}

void FreeKVCacheBlockQueue::remove(KVCacheBlock* block) {
  if (block->prev_free_block == nullptr || block->next_free_block == nullptr)
    throw std::logic_error("block " + std::to_string(block->block_id) + " is not in the free queue");
  block->prev_free_block->next_free_block = block->next_free_block;
  block->next_free_block->prev_free_block = block->prev_free_block;
  block->prev_free_block = block->next_free_block = nullptr;
  --num_free_blocks_;
}

void FreeKVCacheBlockQueue::append(KVCacheBlock* block) {
  if (block->prev_free_block != nullptr || block->next_free_block != nullptr)
    throw std::logic_error("block " + std::to_string(block->block_id) + " is already in the free queue");
  KVCacheBlock* last = fake_free_list_tail_.prev_free_block;
  last->next_free_block = block;
  block->prev_free_block = last;
  block->next_free_block = &fake_free_list_tail_;
  fake_free_list_tail_.prev_free_block = block;
  ++num_free_blocks_;
}

std::vector<KVCacheBlock*> FreeKVCacheBlockQueue::get_all_free_blocks() const {
  std::vector<KVCacheBlock*> out;
  const KVCacheBlock* prev = &fake_free_list_head_;
  // Bounded by the count, so a cycle ends the walk instead of looping forever.
  for (KVCacheBlock* b = fake_free_list_head_.next_free_block; b != &fake_free_list_tail_; b = b->next_free_block) {
    if (b == nullptr || b->prev_free_block != prev || int(out.size()) == num_free_blocks_)
      throw std::logic_error("free queue links are broken after " + std::to_string(out.size()) + " of " +
                             std::to_string(num_free_blocks_) + " blocks");
    out.push_back(b);
    prev = b;
  }
  if (int(out.size()) != num_free_blocks_ || fake_free_list_tail_.prev_free_block != prev)
    throw std::logic_error("free queue holds " + std::to_string(out.size()) + " blocks but counts " +
                           std::to_string(num_free_blocks_));
  return out;
}

}  // namespace parley
