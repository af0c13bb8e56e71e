// Which captured graph a batch replays, and the batch padded to that graph's shape (full graphs, seed 004).
// Host-side logic only: no CUDA header.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/llama.hpp"

namespace parley::cuda {

// A uniform decode batch (every one of its `seqs` sequences with query_len tokens, in sequence order) runs
// the graph of the smallest captured size (`sizes`, ascending) that holds it: returns that size, or 0 to run eagerly.
inline int graph_size(const ForwardBatch& b, int seqs, int query_len, const std::vector<int>& sizes) {
  if (sizes.empty() || seqs < 1 || b.num_tokens() != seqs * query_len) return 0;
  for (int i = 0; i < b.num_tokens(); ++i)
    if (b.token_seq[i] != i / query_len) return 0;
  for (int size : sizes)
    if (size >= seqs) return size;
  return 0;
}

// `b` as the graph of `padded` sequences reads it, into `out` (reused between steps): block tables widened
// to max_blocks, and filler sequences whose tokens sit at position 0 with a table naming block 0, writing
// no KV (slot -1).
inline void pad_for_graph(const ForwardBatch& b, int seqs, int padded, int query_len, int max_blocks, ForwardBatch& out) {
  const int Mp = padded * query_len;
  out.token_ids.assign(size_t(Mp), 0), out.positions.assign(size_t(Mp), 0), out.token_seq.assign(size_t(Mp), 0);
  out.slot_mapping.assign(size_t(Mp), -1);
  out.block_tables.assign(size_t(padded) * max_blocks, 0);
  out.max_blocks_per_seq = max_blocks;
  for (int i = 0; i < Mp; ++i) out.token_seq[size_t(i)] = i / query_len;
  std::copy(b.token_ids.begin(), b.token_ids.end(), out.token_ids.begin());
  std::copy(b.positions.begin(), b.positions.end(), out.positions.begin());
  std::copy(b.slot_mapping.begin(), b.slot_mapping.end(), out.slot_mapping.begin());
  for (int s = 0; s < seqs; ++s)
    std::copy_n(b.block_tables.begin() + int64_t(s) * b.max_blocks_per_seq, b.max_blocks_per_seq,
                out.block_tables.begin() + int64_t(s) * max_blocks);
}

}  // namespace parley::cuda
