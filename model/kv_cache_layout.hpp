// How layers share KV blocks (vLLM's hybrid KV cache allocator). Layers with the same attention window are cut
// into groups of equal size; a block holds one group's layers (its "slots"), and each group has its own block
// table per request. So a sliding-window group gives back the blocks that left its window while the
// full-attention groups keep theirs, and both draw from one pool. One kind of layer: one group, as before.
#pragma once
#include <span>
#include <string>
#include <vector>

namespace parley {

struct LlamaConfig;

struct KvCacheGroup {
  int sliding_window = 0;   // tokens a query sees, itself included; 0: full attention
  std::vector<int> layers;  // layers[s] uses slot s of the group's blocks
};

struct KvCacheLayout {
  std::vector<KvCacheGroup> groups;  // full-attention groups first
  int slots_per_block = 0;           // layers one block holds: the largest group
  std::vector<int> group_of_layer, slot_of_layer;

  // layer_windows[l]: layer l's window (0: full attention).
  static KvCacheLayout for_windows(std::span<const int> layer_windows);
  static KvCacheLayout for_model(const LlamaConfig& config);
  // Every layer its own slot in one group: for a cache that reads another cache's full-attention table.
  static KvCacheLayout single_group(int num_layers);

  int num_groups() const { return int(groups.size()); }
  std::vector<int> group_windows() const;
  bool has_full_attention_group() const { return !groups.empty() && groups[0].sliding_window == 0; }
  bool has_sliding_window() const { return !groups.empty() && groups.back().sliding_window > 0; }  // sorted by window
  std::string describe() const;  // "2 groups of 13 layers (full, window 4096)"
};

}  // namespace parley
