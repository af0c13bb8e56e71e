// The websocket's client messages (http/ws_protocol.hpp): each check's error, in the session's order, and the
// fuzzer's finding (a non-string "type" or "endpoint" threw out of the session's handler and ended the server).
#include "http/ws_protocol.hpp"
#include "tests/openai_test_util.hpp"

using namespace parley::http;
using parley::openai_test::context;

namespace {

// A session where request "busy" runs and `max` may run at once.
WsMessage parse(const std::string& text, int max = 2) {
  return parse_ws_message(text, context(), {[](const std::string& id) { return id == "busy"; }, 1, max});
}

std::string error_of(const WsMessage& m) {
  const auto* e = std::get_if<WsError>(&m);
  return e ? std::to_string(e->error.status) + " " + e->id + ": " + e->error.message : "no error";
}

}  // namespace

TEST_CASE("A websocket message whose type or endpoint is not a string gets that field's error", "[ws]") {
  CHECK(error_of(parse(R"({"id": "a", "type": 1})")) == R"(400 a: "type" must be "request" or "cancel".)");
  CHECK(error_of(parse(R"({"id": "a", "type": {}})")) == R"(400 a: "type" must be "request" or "cancel".)");
  CHECK(error_of(parse(R"({"id": "a", "type": "request", "endpoint": ["chat.completions"], "body": {}})")) ==
        R"(400 a: "endpoint" must be "completions" or "chat.completions".)");
  CHECK(error_of(parse(R"({"id": "a", "type": "request", "endpoint": null, "body": {}})")) ==
        R"(400 a: "endpoint" must be "completions" or "chat.completions".)");
}

TEST_CASE("Websocket messages are checked in the session's order and the first failing check answers", "[ws]") {
  CHECK(error_of(parse("[1]")) == "400 : Each message must be a JSON object.");
  CHECK(error_of(parse(R"({"id": ""})")) == "400 : Each message needs a non-empty string \"id\".");
  CHECK(std::get<WsCancel>(parse(R"({"id": "busy", "type": "cancel"})")).id == "busy");
  CHECK(error_of(parse(R"({"id": "x", "type": "cancel"})")) == "400 x: No request with id x is running.");
  // A running id is refused before its endpoint is looked at, and the limit before the body is parsed.
  CHECK(error_of(parse(R"({"id": "busy", "type": "request", "endpoint": "no"})")) ==
        "400 busy: A request with id busy is already running on this socket.");
  CHECK(error_of(parse(R"({"id": "b", "type": "request", "endpoint": "no"})", 1)) ==
        "429 b: 1 requests are running on this socket (--max-ws-requests 1); send more when one ends.");
  CHECK(error_of(parse(R"({"id": "b", "type": "request", "body": []})")) ==
        "400 b: \"body\" must be an OpenAI request object.");
  const auto start = std::get<WsStart>(parse(
      R"({"id": "c", "type": "request", "endpoint": "chat.completions",
          "body": {"messages": [{"role": "user", "content": "Hi"}]}})"));
  CHECK(start.id == "c");
  CHECK(start.request.endpoint == Endpoint::ChatCompletions);
}

TEST_CASE("A websocket id over 256 bytes is refused without being echoed, and 256 bytes are taken", "[ws]") {
  const std::string at_limit(kMaxClientIdBytes, 'i');
  CHECK(std::get<WsStart>(parse(R"({"id": ")" + at_limit + R"(", "type": "request", "body": {"prompt": "hi"}})")).id ==
        at_limit);
  const std::string over(kMaxClientIdBytes + 1, 'i');
  CHECK(error_of(parse(R"({"id": ")" + over + R"(", "type": "request", "body": {"prompt": "hi"}})")) ==
        "400 : \"id\" is 257 bytes; at most 256 are allowed.");
  // A cancel carries the id too: the same check comes first.
  CHECK(error_of(parse(R"({"id": ")" + over + R"(", "type": "cancel"})")) ==
        "400 : \"id\" is 257 bytes; at most 256 are allowed.");
}
