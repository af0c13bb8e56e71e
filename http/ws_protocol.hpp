// The websocket's client messages (the protocol is at the top of http/ws_session.cpp) as a pure function:
// JSON text in; a request to start, a cancel, or the error to answer out. No Beast: fuzzed directly.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <variant>

#include "http/openai_protocol.hpp"

namespace parley::http {

// A client's id is echoed in every message of its request: longer ones are refused (400).
constexpr size_t kMaxClientIdBytes = 256;

// What the checks need to know of the session the message came on.
struct WsSessionState {
  std::function<bool(const std::string&)> running;  // whether a request with this client id is running
  int running_count = 0;
  int max_requests = 0;  // --max-ws-requests
};

struct WsStart {
  std::string id;
  GenerateRequest request;  // request.endpoint says which endpoint
};
struct WsCancel {
  std::string id;  // a running request's id
};
struct WsError {
  std::string id;  // "" when the message had no usable id
  ApiError error;
};
using WsMessage = std::variant<WsStart, WsCancel, WsError>;

// The checks run in a fixed order and the first failing one answers: JSON object, id (its length), type, cancel of a
// running id, an id already running, the session's limit (429), endpoint, body, then the OpenAI body itself.
WsMessage parse_ws_message(std::string_view text, const ServingContext& serving, const WsSessionState& session);

}  // namespace parley::http
