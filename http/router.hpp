// handle_request as a pure function (Boost.Beast's advice): method, target, auth header and body in; a
// ready response or the work the session must start out. Session I/O lives in http/server.cpp.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "http/anthropic_protocol.hpp"
#include "http/openai_protocol.hpp"
#include "http/responses_protocol.hpp"

namespace parley::http {

struct RouterConfig {
  std::string api_key;           // "" : /v1 is open
  std::string admin_token;       // "" (and no read token): /admin is off
  std::string admin_read_token;  // sees every /admin view, may act on nothing (403)
  std::string version = "0.1.0";
  std::string effective_config;  // GET /admin/config: the TOML the server was started with (secrets hidden)
};

// Whether new generations are taken: Drained by POST /admin/drain (until /admin/resume), ShuttingDown after
// SIGTERM. Either way /health and new generations (HTTP and websocket) answer 503.
enum class Admission { Open, Drained, ShuttingDown };
// The 503 for a new generation, or nothing when they are taken.
std::optional<ApiError> admission_error(Admission a);

struct HttpRequestView {
  std::string method, target, authorization, body;
  std::string origin, host;  // headers: a state-changing /admin request from another origin is refused
  // More than one is a 400: which one counts would be a guess that a proxy in front may not share.
  int authorization_headers = 0;
  Admission admission = Admission::Open;
  bool websocket = false;  // a websocket upgrade request: only /v1/ws takes one (Kind::WebSocket)
  std::string x_api_key;   // Anthropic's header: the API key, as good as a Bearer one
};

// What an /admin action asks the session to do (http/admin.cpp parses, the session acts and audits).
struct AdminAction {
  enum class Kind { Abort, Drain, Resume, LogLevel, ResetPrefixCache };
  Kind kind = Kind::Drain;
  std::string arg;  // Abort: the request id; LogLevel: the level
};

struct RouteResult {
  enum class Kind { Respond, Generate, Metrics, AdminActors, AdminRequests, AdminEvents, AdminAction, WebSocket };
  Kind kind = Kind::Respond;
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::optional<GenerateRequest> generate;                   // Kind::Generate
  std::optional<AdminAction> action;                         // Kind::AdminAction
  std::vector<std::pair<std::string, std::string>> headers;  // extra response headers (the admin page's CSP)
};

// Bearer check in time independent of where the strings differ; the scheme's case is free (RFC 7235).
bool bearer_matches(const std::string& authorization, const std::string& secret);
// The request carries the key: as a Bearer token or in x-api-key (Anthropic's clients send that one).
bool api_key_matches(const HttpRequestView& req, const std::string& key);

// responses: the Responses API's store (GET and DELETE /v1/responses/{id}, previous_response_id); nullptr: none kept.
RouteResult handle_request(const HttpRequestView& req, const RouterConfig& config, const ServingContext& ctx,
                           ResponseStore* responses = nullptr);
// The /admin paths (http/admin.cpp): the page, the JSON views, the live feed and the actions.
RouteResult handle_admin(const HttpRequestView& req, const RouterConfig& config, const ServingContext& ctx);
// Seconds since the Unix epoch (OpenAI's `created`).
long epoch_seconds();

}  // namespace parley::http
