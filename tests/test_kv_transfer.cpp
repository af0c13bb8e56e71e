// The KV transfer codecs on headers no instance writes (fuzz_kv_transfer's findings): integers are read exactly, a
// float or an integer past its field's range is refused, and a layout too large to count overflows nothing.
#include <catch2/catch.hpp>

#include <climits>
#include <nlohmann/json.hpp>

#include "engine/kv_transfer.hpp"

using namespace parley;
using Json = nlohmann::json;

namespace {

// A KV transfer message with this MessagePack header and these KV bytes.
std::string wire(const Json& header, const std::string& kv) {
  const std::vector<uint8_t> head = Json::to_msgpack(header);
  std::string out;
  for (int i = 0; i < 4; ++i) out += char((head.size() >> (8 * i)) & 0xff);
  return out + std::string(head.begin(), head.end()) + kv;
}

const Json kHeader = {{"version", 2},
                      {"req_id", "r"},
                      {"num_prompt_tokens", 2},
                      {"first_token_ids", {5}},
                      {"first_logprobs", Json::array()},
                      {"prompt_logprobs", Json::array()},
                      {"layout", {1, 2, 2, "f32"}},
                      {"num_blocks", 1},
                      {"kv_link", ""},
                      {"kv_bytes", 32}};

std::string with(const char* key, const Json& value) {
  Json h = kHeader;
  h[key] = value;
  return wire(h, std::string(32, 'k'));
}

}  // namespace

TEST_CASE("pd: a KV transfer header with a float or an out-of-range integer for an integer is refused", "[pd]") {
  CHECK(decode_kv_transfer(with("num_blocks", 1)).kv == std::vector<uint8_t>(32, 'k'));
  const auto refused = Catch::Contains("expected an integer in range");
  CHECK_THROWS_WITH(decode_kv_transfer(with("num_blocks", -7.8e56)), refused);  // was a float-to-int cast (UB)
  CHECK_THROWS_WITH(decode_kv_transfer(with("num_prompt_tokens", 1.5)), refused);
  CHECK_THROWS_WITH(decode_kv_transfer(with("first_token_ids", {int64_t(1) << 32})), refused);  // was wrapped to 0
  CHECK_THROWS_WITH(decode_kv_transfer(with("first_logprobs", {{5, -0.5, 1, {{1e20, -1.0}}}})), refused);
  CHECK_THROWS_WITH(decode_kv_transfer(with("kv_bytes", -32)), refused);
}

TEST_CASE("pd: a KV transfer layout whose size overflows is refused", "[pd]") {
  Json h = kHeader;
  h["layout"] = {INT_MAX, INT_MAX, INT_MAX, "f32"}, h["num_blocks"] = INT_MAX, h["kv_link"] = "link", h["kv_bytes"] = 0;
  CHECK_THROWS_WITH(decode_kv_transfer(wire(h, "")), Catch::Contains("bytes do not fill 2147483647 blocks"));
}

TEST_CASE("pd: a prefill request with a float for an integer field is refused", "[pd]") {
  Request r("a", {1, 2}, SamplingParams{}, 9);
  Json j = Json::parse(encode_prefill_request(r));
  CHECK(decode_prefill_request(j.dump()).prompt_token_ids == std::vector<int>{1, 2});
  j["sampling_params"]["max_tokens"] = 1e300;
  CHECK_THROWS_WITH(decode_prefill_request(j.dump()), Catch::Contains("expected an integer in range"));
  j = Json::parse(encode_prefill_request(r));
  j["prompt_token_ids"] = {1, -3e9};
  CHECK_THROWS_WITH(decode_prefill_request(j.dump()), Catch::Contains("expected an integer in range"));
}

TEST_CASE("pd: a prefill request carries skip_special_tokens, and one without it keeps the default", "[pd]") {
  SamplingParams kept_special;
  kept_special.skip_special_tokens = false;  // a hermes or Harmony request: its markers are special tokens
  const std::string sent = encode_prefill_request(Request("a", {1, 2}, kept_special, 9));
  CHECK_FALSE(decode_prefill_request(sent).sampling_params.skip_special_tokens);
  Json older = Json::parse(sent);
  older["sampling_params"].erase("skip_special_tokens");  // as a build before the field travelled wrote it
  CHECK(decode_prefill_request(older.dump()).sampling_params.skip_special_tokens);
}
