// KV cache blocks, their free queue and their prefix hashes (vLLM v1's vllm/v1/core/kv_cache_utils.py).
// Pure logic: the block pool (engine/block_pool.hpp) owns the blocks; these are its parts.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace parley {

// The identity of a full block and of every token before it: XXH3-128 over (parent hash, extra key,
// token ids). Two blocks count as holding the same tokens when their hashes are equal; tokens are never
// compared. With 128 bits a collision among n cached blocks has probability about n^2 / 2^129, so even
// 10^9 blocks give under 10^-20 (vLLM makes the same trade with SHA-256 or xxHash).
struct BlockHash {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const BlockHash&) const = default;
};

// Block ids per KV group, in group order (model/kv_cache_layout.hpp).
using GroupBlockIds = std::vector<std::vector<int>>;

// The parent of a sequence's first block (vLLM's NONE_HASH); fixed, so hashes are reproducible.
inline constexpr BlockHash NONE_HASH{};

// Hash of one full block chained on its parent's hash. `extra` separates otherwise equal token runs
// (a LoRA adapter id, a multimodal input id); 0 means none.
BlockHash hash_block_tokens(const BlockHash& parent_block_hash, std::span<const int> curr_block_token_ids,
                            uint64_t extra = 0);

// Hashes of every FULL block of token_ids, each chained on the one before; a partial last block has none.
std::vector<BlockHash> hash_request_blocks(const std::vector<int>& token_ids, int block_size, uint64_t extra = 0);

// One physical KV cache block (vLLM's KVCacheBlock).
struct KVCacheBlock {
  int block_id = 0;
  int ref_cnt = 0;                      // requests holding the block; 0 means it sits in the free queue
  std::optional<BlockHash> block_hash;  // set once the block is full and cached; cleared on eviction
  // Intrusive links of FreeKVCacheBlockQueue: both null exactly when the block is not in the queue.
  KVCacheBlock* prev_free_block = nullptr;
  KVCacheBlock* next_free_block = nullptr;

  explicit KVCacheBlock(int id = 0) : block_id(id) {}
};

// Free blocks in eviction order, least recently freed at the front (vLLM's FreeKVCacheBlockQueue).
// A doubly linked list through the blocks themselves, so remove() of a cache hit is O(1).
class FreeKVCacheBlockQueue {
 public:
  // Links every block in id order: the first allocations get the lowest ids.
  explicit FreeKVCacheBlockQueue(std::span<KVCacheBlock> blocks);
  // The sentinels' addresses are in the list, so the queue cannot be copied or moved.
  FreeKVCacheBlockQueue(const FreeKVCacheBlockQueue&) = delete;
  FreeKVCacheBlockQueue& operator=(const FreeKVCacheBlockQueue&) = delete;

  int num_free_blocks() const { return num_free_blocks_; }
  // Throws std::runtime_error when the queue is empty.
  KVCacheBlock* popleft();
  // Throws std::logic_error when the block is not in the queue.
  void remove(KVCacheBlock* block);
  // Throws std::logic_error when the block is already in the queue.
  void append(KVCacheBlock* block);
  // Front to back; throws std::logic_error when the links are broken (for tests and invariant checks).
  std::vector<KVCacheBlock*> get_all_free_blocks() const;

 private:
  KVCacheBlock fake_free_list_head_{-1};  // sentinels: no branch for an empty list or an end block
  KVCacheBlock fake_free_list_tail_{-1};
  int num_free_blocks_ = 0;
};

}  // namespace parley

template <>
struct std::hash<parley::BlockHash> {
  // The low word of XXH3-128 is already uniformly mixed.
  size_t operator()(const parley::BlockHash& h) const noexcept { return static_cast<size_t>(h.lo); }
};
