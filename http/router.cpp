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

namespace {

// What every handler is given: the request, the server's settings, the model and the response store.
struct RouteCall {
  const HttpRequestView& req;
  const RouterConfig& config;
  const ServingContext& ctx;
  ResponseStore* responses;
  const std::string& path;
};

RouteResult error_at(const RouteCall& c, int status, std::string message) {
  return error_response(api_error(status, std::move(message)), c.path);
}

RouteResult of_kind(RouteResult::Kind kind, std::string content_type = "application/json") {
  RouteResult r;
  r.kind = kind;
  r.content_type = std::move(content_type);
  return r;
}

RouteResult text_or_error(const RouteCall& c, std::variant<std::string, ApiError> out) {
  if (auto* e = std::get_if<ApiError>(&out)) return error_response(*e, c.path);
  return respond(200, std::get<std::string>(std::move(out)));
}

RouteResult health(const RouteCall& c) {
  if (c.req.admission != Admission::Open) return respond(503, "{\"status\":\"draining\"}");
  return respond(200, "", "text/plain");
}
RouteResult version(const RouteCall& c) { return respond(200, "{\"version\":\"" + c.config.version + "\"}"); }
RouteResult models(const RouteCall& c) { return respond(200, models_response(c.ctx, epoch_seconds())); }
RouteResult metrics(const RouteCall&) {
  return of_kind(RouteResult::Kind::Metrics, "text/plain; version=0.0.4; charset=utf-8");
}
RouteResult websocket_only(const RouteCall& c) { return error_at(c, 426, "Upgrade Required: /v1/ws speaks websocket"); }
RouteResult admin(const RouteCall& c) { return handle_admin(c.req, c.config, c.ctx); }
RouteResult tokenize(const RouteCall& c) { return text_or_error(c, tokenize_response(c.req.body, c.ctx)); }
RouteResult detokenize(const RouteCall& c) { return text_or_error(c, detokenize_response(c.req.body, c.ctx)); }
RouteResult apply_template(const RouteCall& c) { return text_or_error(c, apply_template_response(c.req.body, c.ctx)); }
RouteResult count_tokens(const RouteCall& c) { return text_or_error(c, count_tokens_response(c.req.body, c.ctx)); }

// A stored response: GET shows it, DELETE forgets it.
RouteResult stored_response(const RouteCall& c) {
  const std::string id = c.path.substr(std::string_view("/v1/responses/").size());
  if (id.find('/') != std::string::npos) return error_at(c, 404, "Not Found: " + c.path);
  const auto stored = c.responses ? c.responses->get(id) : nullptr;
  if (!stored || (c.req.method == "DELETE" && !c.responses->remove(id)))
    return error_at(c, 404, "Response with id '" + id + "' not found.");
  return respond(200, c.req.method == "GET" ? detail::dump(stored->response) : response_deleted(id));
}

// The engine's routes: the body parses into an engine request, admitted unless the server is draining. A model
// serves one of generation, embeddings and reranking (--task), and a route of another task is a 400 saying which.
using ParsedRequest = std::variant<GenerateRequest, ApiError>;
enum class Task { Generate, Embed, Rerank };

// Why a route of `task` is refused by a server of `served`.
std::string_view task_refusal(Task task, Task served) {
  if (served == Task::Rerank)
    return "This model reranks (--task rerank): use /v1/rerank or /v1/score, or start the server with --task "
           "generate.";
  if (task == Task::Rerank)
    return "This model does not rerank: /v1/rerank and /v1/score need a server started with --task rerank (a "
           "model file whose pooling type is rank).";
  return task == Task::Embed
             ? "This model generates text: /v1/embeddings needs a server started with --task embed (and a "
               "pooling type, the model file's or --pooling)."
             : "This model serves embeddings (--task embed): use /v1/embeddings, or start the server with "
               "--task generate.";
}

template <ParsedRequest (*parse)(const RouteCall&), Task task = Task::Generate>
RouteResult engine_route(const RouteCall& c) {
  const Task served = c.ctx.pooling == PoolingType::None   ? Task::Generate
                      : c.ctx.pooling == PoolingType::Rank ? Task::Rerank
                                                           : Task::Embed;
  if (task != served) return error_at(c, 400, std::string(task_refusal(task, served)));
  ParsedRequest parsed = parse(c);
  if (auto* e = std::get_if<ApiError>(&parsed)) return error_response(*e, c.path);
  if (auto e = admission_error(c.req.admission)) return error_response(*e, c.path);
  RouteResult r = of_kind(RouteResult::Kind::Generate);
  r.generate = std::move(std::get<GenerateRequest>(parsed));
  return r;
}

ParsedRequest completions(const RouteCall& c) {
  return parse_generate_request(Endpoint::Completions, c.req.body, c.ctx);
}
ParsedRequest chat(const RouteCall& c) { return parse_generate_request(Endpoint::ChatCompletions, c.req.body, c.ctx); }
ParsedRequest messages(const RouteCall& c) { return parse_messages_request(c.req.body, c.ctx); }
ParsedRequest responses(const RouteCall& c) { return parse_responses_request(c.req.body, c.ctx, c.responses); }
ParsedRequest embeddings(const RouteCall& c) { return parse_embedding_request(c.req.body, c.ctx); }
ParsedRequest rerank(const RouteCall& c) { return parse_rerank_request(c.req.body, c.ctx); }
ParsedRequest score(const RouteCall& c) { return parse_score_request(c.req.body, c.ctx); }

enum Method : unsigned { kGet = 1, kPost = 2, kDelete = 4, kOtherMethod = 8, kAnyMethod = ~0u };

// One line per endpoint. A path ending in '/' takes every path under it; the first line that matches answers.
struct Route {
  std::string_view path;
  unsigned methods;
  RouteResult (*handler)(const RouteCall&);
};
constexpr Route kRoutes[] = {
    {"/health", kGet, health},
    {"/version", kGet, version},
    {"/metrics", kGet, metrics},
    {"/v1/models", kGet, models},
    {"/v1/ws", kAnyMethod, websocket_only},
    {"/admin", kAnyMethod, admin},
    {"/admin/", kAnyMethod, admin},  // the page, the views, the live feed and the actions (http/admin.cpp)
    {"/tokenize", kPost, tokenize},
    {"/detokenize", kPost, detokenize},
    {"/apply-template", kPost, apply_template},
    {"/v1/completions", kPost, engine_route<completions>},
    {"/v1/chat/completions", kPost, engine_route<chat>},
    {"/v1/messages", kPost, engine_route<messages>},
    {"/v1/messages/count_tokens", kPost, count_tokens},
    {"/v1/responses", kPost, engine_route<responses>},
    {"/v1/responses/", kGet | kDelete, stored_response},
    {"/v1/embeddings", kPost, engine_route<embeddings, Task::Embed>},
    {"/v1/rerank", kPost, engine_route<rerank, Task::Rerank>},
    {"/rerank", kPost, engine_route<rerank, Task::Rerank>},
    {"/v1/score", kPost, engine_route<score, Task::Rerank>},
};

bool matches(const Route& route, const std::string& path) {
  return route.path.ends_with('/') ? path.starts_with(route.path) : path == route.path;
}

unsigned method_bit(const std::string& method) {
  return method == "GET" ? kGet : method == "POST" ? kPost : method == "DELETE" ? kDelete : kOtherMethod;
}

}  // namespace

RouteResult handle_request(const HttpRequestView& req, const RouterConfig& config, const ServingContext& ctx,
                           ResponseStore* responses) {
  const std::string path = path_of(req.target);
  const RouteCall call{req, config, ctx, responses, path};
  if (req.authorization_headers > 1)
    return error_at(call, 400,
                    "Only one Authorization header is allowed; this request has " +
                        std::to_string(req.authorization_headers) + ".");
  // /rerank (llama.cpp's and vLLM's alias) runs the model: it asks for the key as /v1/ does.
  const bool keyed = path.rfind("/v1/", 0) == 0 || path == "/rerank";
  if (keyed && !config.api_key.empty() && !api_key_matches(req, config.api_key))
    return error_response(api_error(401, "Unauthorized: a valid API key is needed (Authorization: Bearer or x-api-key)",
                                    "invalid_api_key"),
                          path);
  const bool to_admin = path == "/admin" || path.starts_with("/admin/");
  if (req.websocket && !to_admin) {
    if (path != "/v1/ws") return error_at(call, 404, "Not Found: " + path + " (websocket upgrades go to /v1/ws)");
    return of_kind(RouteResult::Kind::WebSocket);
  }
  for (const Route& route : kRoutes) {
    if (!matches(route, path)) continue;
    if (!(route.methods & method_bit(req.method))) return error_at(call, 405, "Method Not Allowed");
    return route.handler(call);
  }
  return error_at(call, 404, "Not Found: " + path);
}

}  // namespace parley::http
