// /v1/completions and /v1/chat/completions bodies: the first byte picks the endpoint and the chat template, the
// rest is the body. Any outcome but a GenerateRequest or an ApiError (an escaped exception, a sanitizer report) fails.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_support.hpp"

using namespace parley;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::tok512();  // loaded once, outside the timed runs
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const http::ServingContext plain = fuzz::serving_context(false), chatml = fuzz::serving_context(true);
  const http::Endpoint endpoint = data[0] & 1 ? http::Endpoint::ChatCompletions : http::Endpoint::Completions;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto parsed = http::parse_generate_request(endpoint, body, data[0] & 2 ? chatml : plain);
  if (auto* request = std::get_if<http::GenerateRequest>(&parsed))
    if (request->prompts.empty() || request->prompts.size() != request->prompt_texts.size()) __builtin_trap();
  return 0;
}
