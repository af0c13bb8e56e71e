// handle_request as a pure function (Boost.Beast's advice): method, target, auth header and body in; a
// ready response or the work the session must start out. Session I/O lives in http/server.cpp.
#pragma once
#include <optional>
#include <string>

#include "http/openai_protocol.hpp"

namespace parley::http {

struct RouterConfig {
  std::string api_key;      // "" : /v1 is open
  std::string admin_token;  // "" : /admin is off
  std::string version = "0.1.0";
  std::string effective_config;  // GET /admin/config: the TOML the server was started with (secrets hidden)
};

struct HttpRequestView {
  std::string method, target, authorization, body;
};

struct RouteResult {
  enum class Kind { Respond, Generate, Metrics, AdminActors, AdminRequests, WebSocket };
  Kind kind = Kind::Respond;
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::optional<GenerateRequest> generate;  // Kind::Generate
};

// Bearer check in time independent of where the strings differ.
bool bearer_matches(const std::string& authorization, const std::string& secret);

RouteResult handle_request(const HttpRequestView& req, const RouterConfig& config, const ServingContext& ctx);

}  // namespace parley::http
