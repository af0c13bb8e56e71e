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

std::optional<int> optional_exact(const nlohmann::json& j) {
  return j.is_null() ? std::nullopt : std::optional<int>(exact<int>(j));
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

nlohmann::json optional_int(const std::optional<int>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace

std::string kv_layout_mismatch(const KvLayout& sent, const KvLayout& here) {
  if (sent.dtype != here.dtype)
    return "the prefill instance's KV cache holds " + kv_dtype_name(sent.dtype) + ", the decode instance's " +
           kv_dtype_name(here.dtype) + " (give both the same --kv-cache-dtype)";
  if (!(sent == here)) return "the KV does not fit this instance (another model or block size)";
  return "";
}

std::string encode_prefill_request(const Request& r, const KvLayout& decode_layout) {
  const SamplingParams& p = r.sampling_params;
  nlohmann::json params = {{"n", p.n},
                           {"temperature", p.temperature},
                           {"top_k", p.top_k},
                           {"top_p", p.top_p},
                           {"min_p", p.min_p},
                           {"presence_penalty", p.presence_penalty},
                           {"frequency_penalty", p.frequency_penalty},
                           {"repetition_penalty", p.repetition_penalty},
                           {"max_tokens", p.max_tokens},
                           {"min_tokens", p.min_tokens},
                           {"ignore_eos", p.ignore_eos},
                           {"stop", p.stop},
                           {"stop_token_ids", p.stop_token_ids},
                           {"include_stop_str_in_output", p.include_stop_str_in_output},
                           {"logit_bias", p.logit_bias}};
  params["seed"] = p.seed ? nlohmann::json(*p.seed) : nlohmann::json(nullptr);
  params["logprobs"] = optional_int(p.logprobs);
  params["prompt_logprobs"] = optional_int(p.prompt_logprobs);
  if (p.structured_outputs)
    params["structured_outputs"] = {{"kind", int(p.structured_outputs->kind)},
                                    {"spec", p.structured_outputs->spec},
                                    {"starts_after", p.structured_outputs->starts_after}};
  return nlohmann::json{{"version", kVersion},
                        {"request_id", r.request_id},
                        {"prompt_token_ids", r.prompt_token_ids},
                        {"seed", r.seed},
                        {"child_req_ids", r.child_req_ids},
                        {"child_seeds", r.child_seeds},
                        {"kv_layout", layout_json(decode_layout)},
                        {"sampling_params", params}}
      .dump();
}

Request decode_prefill_request(std::string_view text, KvLayout* decode_layout) {
  try {
    const auto j = nlohmann::json::parse(text);
    if (j.at("version") != kVersion) bad("request version " + j.at("version").dump());
    const auto& q = j.at("sampling_params");
    SamplingParams p;
    p.n = exact<int>(q.at("n"));
    q.at("temperature").get_to(p.temperature);
    p.top_k = exact<int>(q.at("top_k"));
    q.at("top_p").get_to(p.top_p);
    q.at("min_p").get_to(p.min_p);
    q.at("presence_penalty").get_to(p.presence_penalty);
    q.at("frequency_penalty").get_to(p.frequency_penalty);
    q.at("repetition_penalty").get_to(p.repetition_penalty);
    p.max_tokens = exact<int>(q.at("max_tokens"));
    p.min_tokens = exact<int>(q.at("min_tokens"));
    q.at("ignore_eos").get_to(p.ignore_eos);
    q.at("stop").get_to(p.stop);
    p.stop_token_ids = exact_array<int>(q.at("stop_token_ids"));
    q.at("include_stop_str_in_output").get_to(p.include_stop_str_in_output);
    p.logit_bias = id_floats(q.at("logit_bias"));
    if (!q.at("seed").is_null()) p.seed = exact<uint64_t>(q.at("seed"));
    p.logprobs = optional_exact(q.at("logprobs"));
    p.prompt_logprobs = optional_exact(q.at("prompt_logprobs"));
    if (const auto so = q.find("structured_outputs"); so != q.end()) {
      const int kind = exact<int>(so->at("kind"));
      if (kind < 0 || kind > int(StructuredOutputsParams::Kind::Grammar))
        bad("structured output kind " + std::to_string(kind));
      p.structured_outputs =
          StructuredOutputsParams{StructuredOutputsParams::Kind(kind), so->at("spec").get<std::string>()};
      if (const auto after = so->find("starts_after"); after != so->end())  // absent: from the first token
        p.structured_outputs->starts_after = exact_array<int>(*after);
    }
    Request r(j.at("request_id").get<std::string>(), exact_array<int>(j.at("prompt_token_ids")), p,
              exact<uint64_t>(j.at("seed")));
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
