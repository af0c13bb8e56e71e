#include "engine/kv_transfer.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace parley {
namespace {

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument("KV transfer: " + what); }

constexpr int kVersion = 2;  // 2: the KV in the cache's dtype, the layout naming it

nlohmann::json logprobs_json(const std::vector<TokenLogprobs>& logprobs) {
  nlohmann::json out = nlohmann::json::array();
  for (const TokenLogprobs& t : logprobs) out.push_back({t.token, t.logprob, t.rank, t.top});
  return out;
}

// Integers are read exactly: json's get<int> casts a float (undefined past int's range) and wraps a larger integer.
template <class Int>
Int exact(const nlohmann::json& j) {
  if (j.is_number_unsigned()) {
    if (j.get<uint64_t>() <= uint64_t(std::numeric_limits<Int>::max())) return Int(j.get<uint64_t>());
  } else if (j.is_number_integer()) {
    const int64_t v = j.get<int64_t>();
    if (v < 0 ? std::is_signed_v<Int> && v >= int64_t(std::numeric_limits<Int>::min())
              : uint64_t(v) <= uint64_t(std::numeric_limits<Int>::max()))
      return Int(v);
  }
  bad("expected an integer in range, got " + j.dump());
}

template <class Int>
std::vector<Int> exact_array(const nlohmann::json& j) {
  if (!j.is_array()) bad("expected an array of integers, got " + j.dump());
  std::vector<Int> out;
  for (const auto& v : j) out.push_back(exact<Int>(v));
  return out;
}

// [[token id, value], ...]: logit_bias and a position's top logprobs.
std::vector<std::pair<int, float>> id_floats(const nlohmann::json& j) {
  if (!j.is_array()) bad("expected an array of [id, value] pairs, got " + j.dump());
  std::vector<std::pair<int, float>> out;
  for (const auto& p : j) out.emplace_back(exact<int>(p.at(0)), p.at(1).get<float>());
  return out;
}

std::vector<TokenLogprobs> read_logprobs(const nlohmann::json& j) {
  std::vector<TokenLogprobs> out;
  for (const auto& t : j)
    out.push_back({exact<int>(t.at(0)), t.at(1).get<float>(), exact<int>(t.at(2)), id_floats(t.at(3))});
  return out;
}

nlohmann::json layout_json(const KvLayout& l) { return {l.num_slots, l.kv_dim, l.block_size, kv_dtype_name(l.dtype)}; }

KvLayout read_layout(const nlohmann::json& l) {
  return {exact<int>(l.at(0)), exact<int>(l.at(1)), exact<int>(l.at(2)), parse_kv_dtype(l.at(3).get<std::string>())};
}

// layout.bytes(num_blocks) for a header's values, -1 where that overflows (no cache is that large).
int64_t checked_bytes(const KvLayout& l, int num_blocks) {
  int64_t bytes = 2 * int64_t(kv_dtype_bytes(l.dtype));
  for (int64_t factor : {l.num_slots, l.kv_dim, l.block_size, num_blocks})
    if (__builtin_mul_overflow(bytes, factor, &bytes)) return -1;
  return bytes;
}

// A sampling field's value on the wire, by its type: JSON's own, null for an absent optional.
template <class T>
nlohmann::json to_wire(const T& value) {
  return value;
}
nlohmann::json to_wire(const StructuredOutputsParams& so) {
  return {{"kind", int(so.kind)}, {"spec", so.spec}, {"starts_after", so.starts_after}};
}
template <class T>
nlohmann::json to_wire(const std::optional<T>& value) {
  return value ? to_wire(*value) : nlohmann::json(nullptr);
}

template <class T>
void from_wire(const nlohmann::json& j, T& value) {
  j.get_to(value);
}
void from_wire(const nlohmann::json& j, int& value) { value = exact<int>(j); }
void from_wire(const nlohmann::json& j, uint64_t& value) { value = exact<uint64_t>(j); }
void from_wire(const nlohmann::json& j, std::vector<int>& value) { value = exact_array<int>(j); }
void from_wire(const nlohmann::json& j, std::vector<std::pair<int, float>>& value) { value = id_floats(j); }
void from_wire(const nlohmann::json& j, StructuredOutputsParams& so) {
  const int kind = exact<int>(j.at("kind"));
  if (kind < 0 || kind > int(StructuredOutputsParams::Kind::Grammar))
    bad("structured output kind " + std::to_string(kind));
  so.kind = StructuredOutputsParams::Kind(kind);
  so.spec = j.at("spec").get<std::string>();
  if (const auto after = j.find("starts_after"); after != j.end())  // absent: from the first token
    so.starts_after = exact_array<int>(*after);
}
template <class T>
void from_wire(const nlohmann::json& j, std::optional<T>& value) {
  if (j.is_null()) return value.reset();
  from_wire(j, value.emplace());
}

// Every field of kSamplingFields under its name; OnWire::WhenUsed ones only when they differ from the default.
nlohmann::json sampling_params_json(const SamplingParams& params) {
  nlohmann::json out = nlohmann::json::object();
  for_each_sampling_field([&](const auto& field) {
    if (field.on_wire == OnWire::Always || uses(params, field))
      out[std::string(field.name)] = to_wire(params.*field.member);
  });
  return out;
}

SamplingParams read_sampling_params(const nlohmann::json& j) {
  SamplingParams params;
  for_each_sampling_field([&](const auto& field) {
    const std::string key(field.name);
    if (field.on_wire == OnWire::Always)
      from_wire(j.at(key), params.*field.member);  // a missing one throws: a bad prefill request
    else if (const auto value = j.find(key); value != j.end())
      from_wire(*value, params.*field.member);
  });
  return params;
}

}  // namespace

std::string kv_layout_mismatch(const KvLayout& sent, const KvLayout& here) {
  if (sent.dtype != here.dtype)
    return "the prefill instance's KV cache holds " + kv_dtype_name(sent.dtype) + ", the decode instance's " +
           kv_dtype_name(here.dtype) + " (give both the same --kv-cache-dtype)";
  if (!(sent == here)) return "the KV does not fit this instance (another model or block size)";
  return "";
}

std::string encode_prefill_request(const Request& r, const KvLayout& decode_layout) {
  return nlohmann::json{{"version", kVersion},
                        {"request_id", r.request_id},
                        {"prompt_token_ids", r.prompt_token_ids},
                        {"seed", r.seed},
                        {"child_req_ids", r.child_req_ids},
                        {"child_seeds", r.child_seeds},
                        {"kv_layout", layout_json(decode_layout)},
                        {"sampling_params", sampling_params_json(r.sampling_params)}}
      .dump();
}

Request decode_prefill_request(std::string_view text, KvLayout* decode_layout) {
  try {
    const auto j = nlohmann::json::parse(text);
    if (j.at("version") != kVersion) bad("request version " + j.at("version").dump());
    Request r(j.at("request_id").get<std::string>(), exact_array<int>(j.at("prompt_token_ids")),
              read_sampling_params(j.at("sampling_params")), exact<uint64_t>(j.at("seed")));
    j.at("child_req_ids").get_to(r.child_req_ids);
    r.child_seeds = exact_array<uint64_t>(j.at("child_seeds"));
    r.kv_transfer = KvTransfer::ToDecode;
    if (decode_layout) *decode_layout = read_layout(j.at("kv_layout"));
    return r;
  } catch (const nlohmann::json::exception& e) {
    bad(std::string("bad prefill request (") + e.what() + ")");
  }
}

std::string encode_kv_transfer(const KvTransferPayload& p) {
  if (!p.kv_link.empty() && !p.kv.empty()) throw std::logic_error("KV on the device link travels without its bytes");
  const nlohmann::json header = {
      {"version", kVersion},
      {"req_id", p.req_id},
      {"num_prompt_tokens", p.num_prompt_tokens},
      {"first_token_ids", p.first_token_ids},
      {"first_logprobs", logprobs_json(p.first_logprobs)},
      {"prompt_logprobs", logprobs_json(p.prompt_logprobs)},
      {"layout", layout_json(p.layout)},
      {"num_blocks", p.num_blocks},
      {"kv_link", p.kv_link},
      {"kv_bytes", !p.kv_link.empty() ? p.layout.bytes(p.num_blocks) : int64_t(p.kv.size())}};
  const std::vector<uint8_t> head = nlohmann::json::to_msgpack(header);
  const uint32_t n = uint32_t(head.size());
  std::string out(4 + head.size() + p.kv.size(), '\0');
  for (int i = 0; i < 4; ++i) out[size_t(i)] = char((n >> (8 * i)) & 0xff);
  std::memcpy(out.data() + 4, head.data(), head.size());
  if (!p.kv.empty()) std::memcpy(out.data() + 4 + head.size(), p.kv.data(), p.kv.size());  // none on a link
  return out;
}

KvTransferPayload decode_kv_transfer(std::string_view bytes) {
  if (bytes.size() < 4) bad("only " + std::to_string(bytes.size()) + " bytes");
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= uint32_t(uint8_t(bytes[size_t(i)])) << (8 * i);
  if (bytes.size() - 4 < n)
    bad("the header needs " + std::to_string(n) + " bytes, " + std::to_string(bytes.size() - 4) + " follow");
  KvTransferPayload p;
  size_t kv_bytes = 0;
  try {
    const auto h = nlohmann::json::from_msgpack(bytes.substr(4, n));
    if (h.at("version") != kVersion)
      bad("version " + h.at("version").dump() + ", this build reads " + std::to_string(kVersion));
    p.req_id = h.at("req_id").get<std::string>();
    p.num_prompt_tokens = exact<int>(h.at("num_prompt_tokens"));
    p.first_token_ids = exact_array<int>(h.at("first_token_ids"));
    p.first_logprobs = read_logprobs(h.at("first_logprobs"));
    p.prompt_logprobs = read_logprobs(h.at("prompt_logprobs"));
    p.layout = read_layout(h.at("layout"));
    p.num_blocks = exact<int>(h.at("num_blocks"));
    p.kv_link = h.at("kv_link").get<std::string>();
    kv_bytes = exact<size_t>(h.at("kv_bytes"));
  } catch (const nlohmann::json::exception& e) {
    bad(std::string("bad header (") + e.what() + ")");
  }
  const KvLayout& l = p.layout;
  if (l.num_slots < 1 || l.kv_dim < 1 || l.block_size < 1 || p.num_blocks < 0 || p.num_prompt_tokens < 1 ||
      int64_t(p.num_blocks) * l.block_size < p.num_prompt_tokens)
    bad("inconsistent header for request " + p.req_id);
  const int64_t layout_bytes = checked_bytes(l, p.num_blocks);
  if (layout_bytes < 0 || kv_bytes != uint64_t(layout_bytes))
    bad("request " + p.req_id + ": " + std::to_string(kv_bytes) + " bytes do not fill " + std::to_string(p.num_blocks) +
        " blocks");
  if (!p.kv_link.empty()) kv_bytes = 0;  // the bytes follow over the link
  if (bytes.size() - 4 - n != kv_bytes)
    bad("request " + p.req_id + ": " + std::to_string(bytes.size() - 4 - n) + " bytes of KV, the header says " +
        std::to_string(kv_bytes));
  p.kv.resize(kv_bytes);
  if (kv_bytes > 0) std::memcpy(p.kv.data(), bytes.data() + 4 + n, kv_bytes);
  return p;
}

}  // namespace parley
