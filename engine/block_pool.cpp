#include "engine/block_pool.hpp"

#include <stdexcept>
#include <string>

namespace parley {

BlockPool::BlockPool(int num_blocks) : num_blocks_(num_blocks), in_use_(num_blocks, false) {
  if (num_blocks <= 0) throw std::invalid_argument("the block pool needs at least one block");
  for (int b = num_blocks - 1; b >= 0; --b) free_.push_back(b);
}

int BlockPool::allocate() {
  if (free_.empty()) throw std::runtime_error("out of KV cache blocks (" + std::to_string(num_blocks_) + " in all)");
  const int b = free_.back();
  free_.pop_back();
  in_use_[b] = true;
  return b;
}

void BlockPool::free(int block) {
  if (block < 0 || block >= num_blocks_ || !in_use_[block])
    throw std::logic_error("freeing block " + std::to_string(block) + " that is not in use");
  in_use_[block] = false;
  free_.push_back(block);
}

}  // namespace parley
