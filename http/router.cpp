#include "http/router.hpp"

#include <cctype>
#include <chrono>
#include <string_view>

#include "http/openai_fields.hpp"

namespace parley::http {
namespace {

RouteResult respond(int status, std::string body, std::string type = "application/json") {
  RouteResult r;
  r.status = status;
  r.body = std::move(body);
  r.content_type = std::move(type);
  return r;
}

// An error in the shape of the API its path belongs to: Anthropic's under /v1/messages, OpenAI's elsewhere.
RouteResult error_response(const ApiError& e, const std::string& path) {
  return respond(e.status, is_messages_path(path) ? anthropic_error_body(e) : error_body(e));
}

// Every byte of the longer string is visited whatever the mismatch: no early exit to time.
bool same_secret(const std::string& given, const std::string& secret) {
  unsigned diff = unsigned(given.size() ^ secret.size());
  const size_t n = std::max(given.size(), secret.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char a = i < given.size() ? given[i] : 0, b = i < secret.size() ? secret[i] : 0;
    diff |= unsigned(a ^ b);
  }
  return diff == 0;
}

std::string path_of(const std::string& target) { return target.substr(0, target.find('?')); }

// The credentials after `scheme` (lower case) and its spaces, or nothing when another scheme is named.
std::optional<std::string> credentials_of(const std::string& authorization, std::string_view scheme) {
  if (authorization.size() <= scheme.size() || authorization[scheme.size()] != ' ') return std::nullopt;
  for (size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != scheme[i]) return std::nullopt;
  const size_t start = authorization.find_first_not_of(' ', scheme.size());
  return start == std::string::npos ? std::string() : authorization.substr(start);
}

}  // namespace

long epoch_seconds() {
  return long(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

std::optional<ApiError> admission_error(Admission a) {
  if (a == Admission::Drained)
    return api_error(503, "The server is draining (POST /admin/resume ends it); no new requests are accepted.");
  if (a == Admission::ShuttingDown) return api_error(503, "The server is shutting down; no new requests are accepted.");
  return std::nullopt;
}

bool bearer_matches(const std::string& authorization, const std::string& secret) {
  const std::optional<std::string> credentials = credentials_of(authorization, "bearer");
  return credentials && same_secret(*credentials, secret);
}

bool api_key_matches(const HttpRequestView& req, const std::string& key) {
  return bearer_matches(req.authorization, key) || same_secret(req.x_api_key, key);
}

RouteResult handle_request(const HttpRequestView& req, const RouterConfig& config, const ServingContext& ctx,
                           ResponseStore* responses) {
  const std::string path = path_of(req.target);
  const bool get = req.method == "GET", post = req.method == "POST";
  auto error = [&](int status, std::string message, std::string code = "") {
    return error_response(api_error(status, std::move(message), std::move(code)), path);
  };
  if (req.authorization_headers > 1)
    return error(400, "Only one Authorization header is allowed; this request has " +
                          std::to_string(req.authorization_headers) + ".");
  if (path.rfind("/v1/", 0) == 0 && !config.api_key.empty() && !api_key_matches(req, config.api_key))
    return error(401, "Unauthorized: a valid API key is needed (Authorization: Bearer or x-api-key)",
                 "invalid_api_key");
  if (path == "/admin" || path.rfind("/admin/", 0) == 0) return handle_admin(req, config, ctx);
  if (req.websocket) {
    if (path != "/v1/ws") return error(404, "Not Found: " + path + " (websocket upgrades go to /v1/ws)");
    RouteResult r;
    r.kind = RouteResult::Kind::WebSocket;
    return r;
  }
  auto only = [&](bool ok) { return ok ? std::optional<RouteResult>{} : error(405, "Method Not Allowed"); };

  if (path == "/health") {
    if (auto e = only(get)) return *e;
    if (req.admission != Admission::Open) return respond(503, "{\"status\":\"draining\"}");
    return respond(200, "", "text/plain");
  }
  if (path == "/version") {
    if (auto e = only(get)) return *e;
    return respond(200, "{\"version\":\"" + config.version + "\"}");
  }
  if (path == "/v1/models") {
    if (auto e = only(get)) return *e;
    return respond(200, models_response(ctx, epoch_seconds()));
  }
  if (path == "/metrics") {
    if (auto e = only(get)) return *e;
    RouteResult r;
    r.kind = RouteResult::Kind::Metrics;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return r;
  }
  if (path == "/v1/ws") {
    RouteResult r = error(426, "Upgrade Required: /v1/ws speaks websocket");
    return r;
  }
  if (path == "/tokenize" || path == "/detokenize" || path == "/apply-template") {
    if (auto e = only(post)) return *e;
    auto out = path == "/tokenize"     ? tokenize_response(req.body, ctx)
               : path == "/detokenize" ? detokenize_response(req.body, ctx)
                                       : apply_template_response(req.body, ctx);
    if (auto* e = std::get_if<ApiError>(&out)) return respond(e->status, error_body(*e));
    return respond(200, std::get<std::string>(out));
  }
  if (path == "/v1/messages/count_tokens") {
    if (auto e = only(post)) return *e;
    auto out = count_tokens_response(req.body, ctx);
    if (auto* e = std::get_if<ApiError>(&out)) return error_response(*e, path);
    return respond(200, std::get<std::string>(out));
  }
  if (path.starts_with("/v1/responses/")) {  // a stored response: GET shows it, DELETE forgets it
    const std::string id = path.substr(std::string_view("/v1/responses/").size());
    if (req.method != "GET" && req.method != "DELETE") return error(405, "Method Not Allowed");
    if (id.find('/') != std::string::npos) return error(404, "Not Found: " + path);
    const auto stored = responses ? responses->get(id) : nullptr;
    if (!stored || (req.method == "DELETE" && !responses->remove(id)))
      return error(404, "Response with id '" + id + "' not found.");
    return respond(200, get ? detail::dump(stored->response) : response_deleted(id));
  }
  // The engine's routes: each body parses into an engine request, admitted unless the server is draining.
  const bool embeds = path == "/v1/embeddings";
  if (embeds || path == "/v1/completions" || path == "/v1/chat/completions" || path == "/v1/messages" ||
      path == "/v1/responses") {
    if (auto e = only(post)) return *e;
    if (embeds != (ctx.pooling != PoolingType::None))
      return error(400, embeds ? "This model generates text: /v1/embeddings needs a server started with --task embed "
                                 "(and a pooling type, the model file's or --pooling)."
                               : "This model serves embeddings (--task embed): use /v1/embeddings, or start the "
                                 "server with --task generate.");
    auto parsed = embeds                      ? parse_embedding_request(req.body, ctx)
                  : path == "/v1/messages"    ? parse_messages_request(req.body, ctx)
                  : path == "/v1/responses"   ? parse_responses_request(req.body, ctx, responses)
                  : path == "/v1/completions" ? parse_generate_request(Endpoint::Completions, req.body, ctx)
                                              : parse_generate_request(Endpoint::ChatCompletions, req.body, ctx);
    if (auto* e = std::get_if<ApiError>(&parsed)) return error_response(*e, path);
    if (auto e = admission_error(req.admission)) return error_response(*e, path);
    RouteResult r;
    r.kind = RouteResult::Kind::Generate;
    r.generate = std::move(std::get<GenerateRequest>(parsed));
    return r;
  }
  return error(404, "Not Found: " + path);
}

}  // namespace parley::http
