// What crosses between a decode and a prefill instance for one request. To the prefill side:
// the request (prompt, sampling parameters, seeds, children) as JSON. Back: the prompt's KV blocks, the
// first token(s) the prefill sampled (n of them, child by child, for an n > 1 request) with their logprobs (and the
// prompt's, when asked),
// and the layout the KV assumes, so a decode instance with another model shape refuses it. On the wire: a
// 4-byte little-endian length, a MessagePack header (nlohmann::json), then the KV's bytes in the cache's dtype,
// or none where the KV goes GPU to GPU over a device link (model/kv_link.hpp) in the same layout.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/outputs.hpp"
#include "engine/request.hpp"
#include "kernels/kv_dtype.hpp"

namespace parley {

struct KvLayout {
  int num_slots = 0, kv_dim = 0, block_size = 0;  // num_slots: layers one block holds (model/kv_cache_layout.hpp)
  KvDtype dtype = KvDtype::F32;
  bool operator==(const KvLayout&) const = default;
  int64_t bytes(int num_blocks) const {
    return int64_t(2) * num_slots * kv_dim * block_size * num_blocks * kv_dtype_bytes(dtype);
  }
};

// Why KV of layout `sent` cannot go into a cache of layout `here` (naming the differing field), or "" when it can.
std::string kv_layout_mismatch(const KvLayout& sent, const KvLayout& here);

struct KvTransferPayload {
  std::string req_id;
  int num_prompt_tokens = 0;                  // the tokens whose KV the blocks hold
  std::vector<int> first_token_ids;           // one per child of an n > 1 request, in child order
  std::vector<TokenLogprobs> first_logprobs;  // one per first token when logprobs were asked for, else none
  KvLayout layout;
  int num_blocks = 0;
  std::string kv_link;      // non-empty: the KV follows on this device link (both ends name it alike)
  std::vector<uint8_t> kv;  // else: KvCache::export_blocks of the prompt's blocks
  std::vector<TokenLogprobs> prompt_logprobs;  // prompt tokens 1.. scored, when the request asked for prompt_logprobs
};

// The request a decode instance routes to a prefill instance: every field that changes its tokens, and the
// decode side's KV layout, so a prefill instance whose KV would not fit refuses it before computing any.
std::string encode_prefill_request(const Request& request, const KvLayout& decode_layout = {});
// Throws std::invalid_argument for malformed JSON or a missing field; the result is a ToDecode request.
// decode_layout, when given, receives the layout the decode side expects.
Request decode_prefill_request(std::string_view json, KvLayout* decode_layout = nullptr);

std::string encode_kv_transfer(const KvTransferPayload& payload);
// Throws std::invalid_argument naming what is wrong: a short buffer, a bad header, or a KV size that does
// not match the layout and block count.
KvTransferPayload decode_kv_transfer(std::string_view bytes);

}  // namespace parley
