#include "http/ws_protocol.hpp"

#include <nlohmann/json.hpp>

namespace parley::http {

namespace {

// A string field, `fallback` when absent; any other type reads as "", which no check accepts (json::value would
// throw, and an exception on the session's thread would end the server).
std::string string_field(const nlohmann::json& m, const char* key, const std::string& fallback) {
  const auto it = m.find(key);
  if (it == m.end()) return fallback;
  return it->is_string() ? it->get<std::string>() : "";
}

WsError error(const std::string& id, const std::string& message) { return {id, api_error(400, message)}; }
}  // namespace

WsMessage parse_ws_message(std::string_view text, const ServingContext& serving, const WsSessionState& session) {
  const nlohmann::json m = nlohmann::json::parse(text, nullptr, false);
  if (m.is_discarded() || !m.is_object()) return error("", "Each message must be a JSON object.");
  const auto id_it = m.find("id");
  if (id_it == m.end() || !id_it->is_string() || id_it->get<std::string>().empty())
    return error("", "Each message needs a non-empty string \"id\".");
  const std::string id = *id_it;
  if (id.size() > kMaxClientIdBytes)  // not echoed: the error would carry what the limit keeps out
    return error("", "\"id\" is " + std::to_string(id.size()) + " bytes; at most " + std::to_string(kMaxClientIdBytes) +
                         " are allowed.");
  const std::string type = string_field(m, "type", "");
  if (type == "cancel") {
    if (!session.running(id)) return error(id, "No request with id " + id + " is running.");
    return WsCancel{id};
  }
  if (type != "request") return error(id, "\"type\" must be \"request\" or \"cancel\".");
  if (session.running(id)) return error(id, "A request with id " + id + " is already running on this socket.");
  if (session.running_count >= session.max_requests) {
    return WsError{id, api_error(429, std::to_string(session.running_count) +
                                          " requests are running on this socket "
                                          "(--max-ws-requests " +
                                          std::to_string(session.max_requests) + "); send more when one ends.")};
  }
  const std::string endpoint = string_field(m, "endpoint", "completions");
  if (endpoint != "completions" && endpoint != "chat.completions")
    return error(id, "\"endpoint\" must be \"completions\" or \"chat.completions\".");
  const auto body = m.find("body");
  if (body == m.end() || !body->is_object()) return error(id, "\"body\" must be an OpenAI request object.");
  const Endpoint ep = endpoint == "completions" ? Endpoint::Completions : Endpoint::ChatCompletions;
  auto parsed = parse_generate_request(ep, body->dump(), serving);
  if (auto* e = std::get_if<ApiError>(&parsed)) return WsError{id, *e};
  if (std::get<GenerateRequest>(parsed).tool_calling) {  // its deltas carry text, never tool_calls
    ApiError e = api_error(400,
                           "Tool calls are parsed on POST /v1/chat/completions only; on /v1/ws send "
                           "\"tool_choice\": \"none\" and read the calls from the text.");
    e.param = "tool_choice";
    return WsError{id, e};
  }
  return WsStart{id, std::move(std::get<GenerateRequest>(parsed))};
}

}  // namespace parley::http
