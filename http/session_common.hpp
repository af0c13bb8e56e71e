// Shared by the server's own TUs only (Beast is heavy): the per-connection context and the bridge that
// carries engine outputs from actor threads onto a session's strand.
#pragma once
#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include <atomic>
#include <memory>

#include <spdlog/spdlog.h>

#include "http/admin_state.hpp"
#include "http/connection_metrics.hpp"
#include "http/generation.hpp"
#include "http/log_text.hpp"
#include "http/server.hpp"

namespace parley::http {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

struct ServerContext {
  EngineClient* engine = nullptr;
  ServerOptions options;
  ServingContext serving;
  std::atomic<uint64_t> next_id{0};
  std::atomic<int> live_generations{0};  // shutdown waits for these to end
  std::atomic<bool> draining{false};     // SIGTERM came: new generations (on open connections) get 503
  ConnectionMetrics connections;
  std::atomic<bool> admin_drained{false};  // POST /admin/drain: new generations get 503 until /admin/resume
  LiveRequests live_requests;              // for POST /admin/requests/{id}/abort
  AdminSnapshots admin_snapshots;          // for GET /admin/events
  ResponseStore responses;                 // /v1/responses kept for GET and previous_response_id
};

inline Admission admission(const ServerContext& ctx) {
  return ctx.draining ? Admission::ShuttingDown : ctx.admin_drained ? Admission::Drained : Admission::Open;
}

// Counts a generation as live from construction to destruction.
struct LiveGeneration {
  std::atomic<int>& count;
  explicit LiveGeneration(std::atomic<int>& c) : count(c) { ++count; }
  ~LiveGeneration() { --count; }
  LiveGeneration(const LiveGeneration&) = delete;
  LiveGeneration& operator=(const LiveGeneration&) = delete;
};

// A RequestSink that posts each call to a session's executor; once the session is gone, calls are dropped.
template <class Session>
struct StrandSink : RequestSink {
  std::weak_ptr<Session> session;
  net::any_io_executor executor;
  std::string key;  // which of the session's generations (websocket: the client's id)

  StrandSink(std::weak_ptr<Session> s, net::any_io_executor ex, std::string k)
      : session(std::move(s)), executor(std::move(ex)), key(std::move(k)) {}
  void on_output(const RequestOutput& output) override {
    net::post(executor, [s = session, k = key, output] {
      if (auto self = s.lock()) self->on_engine_output(k, output);
    });
  }
  void on_admitted() override {
    net::post(executor, [s = session, k = key] {
      if (auto self = s.lock()) self->on_engine_admitted(k);
    });
  }
  void on_rejected(int status, const std::string& message) override {
    net::post(executor, [s = session, k = key, status, message] {
      if (auto self = s.lock()) self->on_engine_rejected(k, status, message);
    });
  }
};

// prefix and 14 hex digits unique to this server's life ("chatcmpl-", "cmpl-", "msg_", "resp_": each API's own).
std::string new_request_id(ServerContext& ctx, const char* prefix);
// A generation registered for /admin while it runs (abort by its id; with --admin-show-prompts the first 200
// bytes of its prompt, else none).
inline std::unique_ptr<LiveRequests::Entry> register_live(ServerContext& ctx, const Generation& gen,
                                                          const std::vector<EngineRequestSpec>& specs) {
  std::vector<std::string> engine_ids;
  for (const auto& s : specs) engine_ids.push_back(s.req_id);
  const auto& texts = gen.request().prompt_texts;
  std::string prompt = ctx.options.admin_show_prompts && !texts.empty() ? texts.front().substr(0, 200) : "";
  return ctx.live_requests.add(gen.id(), std::move(engine_ids), std::move(prompt));
}

// Unknown request fields a generation accepted: one warning naming them, and their count in /metrics.
inline void note_ignored_fields(ServerContext& ctx, const std::string& id, const std::vector<std::string>& fields) {
  if (fields.empty()) return;
  std::string names;
  for (const std::string& f : fields) names += (names.empty() ? "" : ", ") + log_excerpt(f);
  spdlog::warn("{} ignored request fields Parley does not know: {}", id, names);
  ctx.connections.on_ignored_fields(fields.size());
}

// Starts an HTTP session on an accepted connection.
void start_http_session(ServerContext& ctx, tcp::socket socket);
// Starts a websocket session on an upgraded connection.
void start_websocket(ServerContext& ctx, beast::tcp_stream stream, beast::http::request<beast::http::string_body> req);

}  // namespace parley::http
