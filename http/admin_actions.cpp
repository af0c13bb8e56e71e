// The /admin actions (each one audit line) and the state behind them.
#include "http/admin_actions.hpp"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "http/admin_json.hpp"
#include "http/log_text.hpp"

namespace parley::http {

std::unique_ptr<LiveRequests::Entry> LiveRequests::add(const std::string& id, std::vector<std::string> engine_ids,
                                                       std::string prompt) {
  std::lock_guard lock(mutex_);
  live_[id] = Live{std::move(engine_ids), std::move(prompt)};
  return std::unique_ptr<Entry>(new Entry{this, id});
}

void LiveRequests::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  live_.erase(id);
}

std::vector<std::string> LiveRequests::engine_ids(const std::string& id) const {
  std::lock_guard lock(mutex_);
  if (auto it = live_.find(id); it != live_.end()) return it->second.engine_ids;
  for (const auto& [user, live] : live_)
    for (const std::string& e : live.engine_ids)
      if (e == id) return {e};
  return {};
}

std::map<std::string, std::string> LiveRequests::prompts() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::string> out;
  for (const auto& [user, live] : live_)
    if (!live.prompt.empty())
      for (const std::string& e : live.engine_ids) out[e] = live.prompt;
  return out;
}

AdminSnapshots::View AdminSnapshots::current(EngineClient& engine) {
  const auto now = std::chrono::steady_clock::now();
  std::shared_ptr<State> st = state_;
  std::unique_lock lock(st->mutex);
  View view = st->view;
  if (st->answered_at != std::chrono::steady_clock::time_point{})
    view.age_ms = long(std::chrono::duration_cast<std::chrono::milliseconds>(now - st->answered_at).count());
  const bool stale = now - st->asked_at > std::chrono::milliseconds(250);
  if (st->asking || !stale) return view;
  st->asking = true;
  st->asked_at = now;
  lock.unlock();
  // Three answers; the view (and its age) moves on when the last one is in.
  auto pending = std::make_shared<int>(3);
  auto store = [st, pending](std::string View::*field) {
    return [st, pending, field](std::string text) {
      std::lock_guard lock(st->mutex);
      st->view.*field = std::move(text);
      if (--*pending == 0) st->asking = false, st->answered_at = std::chrono::steady_clock::now();
    };
  };
  engine.admin_requests(
      [done = store(&View::requests)](const std::vector<EngineView>& v) { done(admin_requests_json(v)); });
  engine.admin_actors(
      [done = store(&View::actors)](const std::vector<std::vector<ActorView>>& v) { done(admin_actors_json(v)); });
  engine.metrics(store(&View::metrics));
  return view;
}

void run_admin_action(ServerContext& ctx, const AdminAction& a, const std::string& who,
                      std::function<void(int, std::string)> reply) {
  using Kind = AdminAction::Kind;
  auto audit = [&](const std::string& what) { spdlog::info("admin action by {}: {}", who, what); };
  switch (a.kind) {
    case Kind::Abort: {
      const std::vector<std::string> ids = ctx.live_requests.engine_ids(a.arg);
      if (ids.empty()) {
        audit("abort " + log_excerpt(a.arg) + " (not live)");
        return reply(404, error_body(api_error(404, "No live request " + a.arg + ".")));
      }
      audit("abort " + log_excerpt(a.arg) + " (" + std::to_string(ids.size()) + " engine request(s))");
      ctx.engine->abort(ids);
      return reply(200, nlohmann::json{{"aborted", a.arg}, {"engine_requests", ids}}.dump());
    }
    case Kind::Drain:
    case Kind::Resume: {
      const bool drain = a.kind == Kind::Drain;
      ctx.admin_drained = drain;
      audit(drain ? "drain: new requests get 503, live ones finish" : "resume: new requests are accepted again");
      return reply(200, nlohmann::json{{"draining", drain}, {"live_generations", ctx.live_generations.load()}}.dump());
    }
    case Kind::LogLevel:
      audit("log level " + std::string(spdlog::level::to_string_view(spdlog::get_level()).data()) + " -> " + a.arg);
      spdlog::set_level(spdlog::level::from_str(a.arg));
      return reply(200, nlohmann::json{{"level", a.arg}}.dump());
    case Kind::ResetPrefixCache:
      audit("reset the prefix cache");
      ctx.engine->reset_prefix_cache([reply](bool done) {
        if (done) return reply(200, nlohmann::json{{"reset", true}}.dump());
        reply(409, error_body(api_error(409,
                                        "The prefix cache was not reset: some blocks are in use (as vLLM, it "
                                        "resets only when no request holds a block).")));
      });
      return;
  }
}

}  // namespace parley::http
