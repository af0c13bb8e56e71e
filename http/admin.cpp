// The /admin paths: who may see (the admin token or the read-only token) and who may act (the admin token
// only, and not from another origin), the page, the JSON views, the live feed and the actions parsed.
#include <nlohmann/json.hpp>

#include "http/admin_page.hpp"
#include "http/router.hpp"

namespace parley::http {
namespace {

enum class AdminRole { None, ReadOnly, Full };

AdminRole role_of(const std::string& authorization, const RouterConfig& c) {
  if (!c.admin_token.empty() && bearer_matches(authorization, c.admin_token)) return AdminRole::Full;
  if (!c.admin_read_token.empty() && bearer_matches(authorization, c.admin_read_token)) return AdminRole::ReadOnly;
  return AdminRole::None;
}

RouteResult json(int status, std::string body) {
  RouteResult r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

RouteResult error(int status, std::string message) {
  return json(status, error_body(api_error(status, std::move(message), status == 401 ? "invalid_api_key" : "")));
}

RouteResult of_kind(RouteResult::Kind kind, std::string type = "application/json") {
  RouteResult r;
  r.kind = kind;
  r.content_type = std::move(type);
  return r;
}

RouteResult action(AdminAction::Kind kind, std::string arg = "") {
  RouteResult r = of_kind(RouteResult::Kind::AdminAction);
  r.action = AdminAction{kind, std::move(arg)};
  return r;
}

// The page asks for the token itself, so it is served without one too, but as a 401 (no data is in it).
RouteResult page(AdminRole role) {
  RouteResult r;
  r.status = role == AdminRole::None ? 401 : 200;
  r.body = admin_page_html();
  r.content_type = "text/html; charset=utf-8";
  r.headers = {{"Content-Security-Policy", admin_page_csp()},
               {"Cache-Control", "no-store"},
               {"X-Content-Type-Options", "nosniff"},
               {"Referrer-Policy", "no-referrer"}};
  if (role == AdminRole::None) r.headers.push_back({"WWW-Authenticate", "Bearer"});
  return r;
}

std::optional<RouteResult> parse_log_level(const std::string& body, std::string& level) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("level") || !j["level"].is_string())
    return error(400, "The body must be {\"level\": \"trace|debug|info|warn|error|critical|off\"}.");
  level = j["level"];
  for (const char* known : {"trace", "debug", "info", "warn", "error", "critical", "off"})
    if (level == known) return std::nullopt;
  return error(400, "Unknown log level \"" + level + "\": trace, debug, info, warn, error, critical or off.");
}

}  // namespace

RouteResult handle_admin(const HttpRequestView& req, const RouterConfig& config, const ServingContext& ctx) {
  const std::string path = req.target.substr(0, req.target.find('?'));
  if (config.admin_token.empty() && config.admin_read_token.empty())
    return error(404, "The admin endpoints are off: start the server with --admin-token.");
  const AdminRole role = role_of(req.authorization, config);
  const bool get = req.method == "GET";
  if (path == "/admin" && get) return page(role);
  if (role == AdminRole::None) return error(401, "Unauthorized");

  if (get) {
    if (path == "/admin/actors") return of_kind(RouteResult::Kind::AdminActors);
    if (path == "/admin/model") return json(200, model_card(ctx, 0));
    if (path == "/admin/requests") return of_kind(RouteResult::Kind::AdminRequests);
    if (path == "/admin/events") return of_kind(RouteResult::Kind::AdminEvents, "text/event-stream");
    if (path == "/admin/config") {
      RouteResult r = json(200, config.effective_config);
      r.content_type = "application/toml";
      return r;
    }
  }
  // Everything else changes state: the admin token only, and only from this server's own pages.
  const bool abort =
      path.rfind("/admin/requests/", 0) == 0 && path.size() > 22 && path.substr(path.size() - 6) == "/abort";
  const bool known = abort || path == "/admin/drain" || path == "/admin/resume" ||
                     path == "/admin/reset-prefix-cache" || path == "/admin/log-level";
  if (!known) return error(404, "Not Found: " + path);
  const bool put = path == "/admin/log-level";
  if (req.method != (put ? "PUT" : "POST"))
    return error(405, "Method Not Allowed: " + path + " takes " + (put ? "PUT" : "POST"));
  if (role != AdminRole::Full) return error(403, "The read-only admin token may not act.");
  if (!req.origin.empty() && req.origin != "http://" + req.host && req.origin != "https://" + req.host)
    return error(403, "Admin actions from another origin (" + req.origin + ") are refused.");

  if (abort) return action(AdminAction::Kind::Abort, path.substr(16, path.size() - 16 - 6));
  if (path == "/admin/drain") return action(AdminAction::Kind::Drain);
  if (path == "/admin/resume") return action(AdminAction::Kind::Resume);
  if (path == "/admin/reset-prefix-cache") return action(AdminAction::Kind::ResetPrefixCache);
  std::string level;
  if (auto e = parse_log_level(req.body, level)) return *e;
  return action(AdminAction::Kind::LogLevel, level);
}

}  // namespace parley::http
