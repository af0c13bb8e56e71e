// The pool of KV cache blocks (vLLM's BlockPool): hands out physical block ids and takes them back.
#pragma once
#include <vector>

namespace parley {

class BlockPool {
 public:
  explicit BlockPool(int num_blocks);

  int num_blocks() const { return num_blocks_; }
  int num_free() const { return static_cast<int>(free_.size()); }
  int num_used() const { return num_blocks_ - num_free(); }
  // Lowest free id first, so runs are reproducible; throws std::runtime_error when empty.
  int allocate();
  // Throws std::logic_error on a double free or an id that is not the pool's.
  void free(int block);

 private:
  int num_blocks_;
  std::vector<int> free_;      // a stack; ids pushed in descending order
  std::vector<bool> in_use_;
};

}  // namespace parley
