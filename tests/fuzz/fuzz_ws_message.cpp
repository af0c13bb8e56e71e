// Websocket client messages (http/ws_protocol.hpp) on a session where request "busy" runs and one more fits.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "http/ws_protocol.hpp"
#include "tests/fuzz/fuzz_support.hpp"

using namespace parley;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::tok512();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const http::ServingContext serving = fuzz::serving_context(true);
  static const http::WsSessionState session{[](const std::string& id) { return id == "busy"; }, 1, 2};
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const http::WsMessage message = http::parse_ws_message(text, serving, session);
  if (auto* cancel = std::get_if<http::WsCancel>(&message); cancel && cancel->id != "busy") __builtin_trap();
  if (auto* start = std::get_if<http::WsStart>(&message); start && (start->id.empty() || start->id == "busy"))
    __builtin_trap();
  return 0;
}
