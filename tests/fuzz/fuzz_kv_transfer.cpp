// What a prefill and a decode instance send each other (engine/kv_transfer.hpp): the first byte picks the KV
// transfer or the prefill request, the rest is the message. Malformed input may only throw std::invalid_argument,
// and what decodes encodes to a message that decodes to the same.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "engine/kv_transfer.hpp"

using namespace parley;

namespace {

void kv_transfer(std::string_view bytes) {
  const KvTransferPayload p = decode_kv_transfer(bytes);
  const KvTransferPayload q = decode_kv_transfer(encode_kv_transfer(p));
  if (q.req_id != p.req_id || q.kv != p.kv || q.num_blocks != p.num_blocks || !(q.layout == p.layout) ||
      q.first_token_ids != p.first_token_ids || q.kv_link != p.kv_link)
    __builtin_trap();
}

void prefill_request(std::string_view text) {
  KvLayout layout;
  const Request r = decode_prefill_request(text, &layout);
  KvLayout again;
  const Request s = decode_prefill_request(encode_prefill_request(r, layout), &again);
  if (s.request_id != r.request_id || s.prompt_token_ids != r.prompt_token_ids || s.seed != r.seed ||
      s.child_seeds != r.child_seeds || !(again == layout))
    __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] & 1)
      prefill_request(bytes);
    else
      kv_transfer(bytes);
  } catch (const std::invalid_argument&) {}
  return 0;
}
