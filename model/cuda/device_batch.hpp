// A device pass's batch on the host: refused before any kernel runs if it does not fit the device, and
// which captured graph it replays, padded to that graph's shape (full graphs, seed 004). No CUDA header.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/device_model.hpp"
#include "model/llama.hpp"

namespace parley::cuda {

// What the device's buffers hold; a batch past any of it would make a kernel read or write out of bounds.
struct DeviceLimits {
  int max_tokens, max_logits, max_seqs, max_blocks_per_seq;
  int num_blocks, block_size, vocab_size, max_seq_len;
  int num_kv_groups = 1;
};

// Throws std::invalid_argument (too large) or std::out_of_range (an id, position, slot or row outside).
inline void check_batch(const ForwardBatch& b, const DeviceSampling* sampling, const DeviceLimits& l) {
  const int M = b.num_tokens();
  if (M < 1 || M > l.max_tokens)
    throw std::invalid_argument("forward: " + std::to_string(M) + " tokens, the device holds " +
                                std::to_string(l.max_tokens));
  if (b.num_kv_groups != l.num_kv_groups)
    throw std::invalid_argument("forward: block tables for " + std::to_string(b.num_kv_groups) +
                                " KV groups, the cache has " + std::to_string(l.num_kv_groups));
  const size_t G = size_t(l.num_kv_groups);
  if (b.positions.size() != size_t(M) || b.token_seq.size() != size_t(M) || b.slot_mapping.size() != G * M)
    throw std::invalid_argument("forward: positions, sequences and (per KV group) slots must have one entry per token");
  if (int(b.logits_indices.size()) > l.max_logits)
    throw std::invalid_argument("forward: more logits rows than the device holds");
  if (b.max_blocks_per_seq < 1 || b.max_blocks_per_seq > l.max_blocks_per_seq ||
      b.block_tables.size() > G * l.max_seqs * b.max_blocks_per_seq ||
      b.block_tables.size() % (G * b.max_blocks_per_seq) != 0)
    throw std::invalid_argument("forward: block tables larger than the device holds");
  const int seqs = b.num_seqs();
  for (int i = 0; i < M; ++i) {
    if (b.token_ids[i] < 0 || b.token_ids[i] >= l.vocab_size)
      throw std::out_of_range("token id " + std::to_string(b.token_ids[i]) + " outside the vocabulary");
    if (b.positions[i] < 0 || b.positions[i] >= std::min(l.max_seq_len, b.max_blocks_per_seq * l.block_size))
      throw std::out_of_range("position " + std::to_string(b.positions[i]) + " outside the context or its block table");
    if (b.token_seq[i] < 0 || b.token_seq[i] >= seqs) throw std::out_of_range("token of no sequence");
  }
  for (int64_t slot : b.slot_mapping)
    if (slot < 0 || slot >= int64_t(l.num_blocks) * l.block_size) throw std::out_of_range("KV slot outside the cache");
  for (int id : b.block_tables)
    if (id < 0 || id >= l.num_blocks) throw std::out_of_range("block table names a block outside the cache");
  for (int r : b.logits_indices)
    if (r < 0 || r >= M) throw std::out_of_range("logits index outside the batch");
  if (!sampling) return;
  std::vector<bool> seen(b.logits_indices.size(), false);
  if (sampling->params.size() != sampling->logits_rows.size())
    throw std::invalid_argument("device sampling: one parameter set per row");
  for (int r : sampling->logits_rows) {
    if (r < 0 || r >= int(seen.size()) || seen[size_t(r)])
      throw std::out_of_range("device sampling: a bad or repeated logits row");
    seen[size_t(r)] = true;
  }
}

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
inline void pad_for_graph(const ForwardBatch& b, int seqs, int padded, int query_len, int max_blocks,
                          ForwardBatch& out) {
  const int Mp = padded * query_len, M = b.num_tokens(), G = b.num_kv_groups;
  out.num_kv_groups = G;
  out.token_ids.assign(size_t(Mp), 0), out.positions.assign(size_t(Mp), 0), out.token_seq.assign(size_t(Mp), 0);
  out.slot_mapping.assign(size_t(G) * Mp, -1);
  out.block_tables.assign(size_t(G) * padded * max_blocks, 0);
  out.max_blocks_per_seq = max_blocks;
  for (int i = 0; i < Mp; ++i) out.token_seq[size_t(i)] = i / query_len;
  std::copy(b.token_ids.begin(), b.token_ids.end(), out.token_ids.begin());
  std::copy(b.positions.begin(), b.positions.end(), out.positions.begin());
  for (int g = 0; g < G; ++g) {  // each group's slots and tables at the padded shape's offsets
    std::copy_n(b.group_slot_mapping(g), M, out.slot_mapping.begin() + int64_t(g) * Mp);
    for (int s = 0; s < seqs; ++s)
      std::copy_n(b.group_block_tables(g) + int64_t(s) * b.max_blocks_per_seq, b.max_blocks_per_seq,
                  out.block_tables.begin() + (int64_t(g) * padded + s) * max_blocks);
  }
}

}  // namespace parley::cuda
