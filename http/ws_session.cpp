// Websocket /v1/ws: several generations multiplexed on one socket, each tagged with the client's id.
//   -> {"type": "request", "id": "a1", "endpoint": "completions" | "chat.completions", "body": {...OpenAI body...}}
//   -> {"type": "cancel", "id": "a1"}
//   <- {"id": "a1", "type": "delta", "index": 0, "text": "...", "token_ids": [...]}   (finish_reason on the last)
//   <- {"id": "a1", "type": "final", "choices": [...], "usage": {...}}
//   <- {"id": "a1", "type": "error", "error": {...}}
#include <spdlog/spdlog.h>

#include <deque>
#include <map>

#include "http/endpoints.hpp"
#include "http/log_text.hpp"
#include "http/session_common.hpp"
#include "http/ws_protocol.hpp"

namespace parley::http {
namespace {

namespace ws = beast::websocket;

class WsSession : public std::enable_shared_from_this<WsSession> {
 public:
  WsSession(ServerContext& ctx, beast::tcp_stream stream)
      : ctx_(ctx), ws_(std::move(stream)), write_timer_(ws_.get_executor()) {}
  ~WsSession() { ctx_.connections.on_closed(); }

  void run(beast::http::request<beast::http::string_body> req) {
    beast::get_lowest_layer(ws_).expires_never();
    ws_.set_option(ws::stream_base::timeout::suggested(beast::role_type::server));
    ws_.read_message_max(0);  // the size check is ours (do_read), so that the close waits for earlier answers
    ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return;
      self->do_read();
    });
  }

  void on_engine_output(const std::string& client_id, const RequestOutput& out) {
    auto it = live_.find(client_id);
    if (it == live_.end()) return;
    std::string text = it->second.gen->on_output(out);
    if (!text.empty()) send(std::move(text));
    if (it->second.gen->done()) {
      const auto& failed = it->second.gen->failure();
      send(failed ? it->second.gen->error_text(*failed) : it->second.gen->closing_text());
      retire(client_id);
    }
  }
  void on_engine_admitted(const std::string&) {}
  void on_engine_rejected(const std::string& client_id, int status, const std::string& message) {
    auto it = live_.find(client_id);
    if (it == live_.end()) return;
    send(it->second.gen->error_text(api_error(status, message)));
    retire(client_id);
  }

 private:
  // A message is read in pieces so that an oversized one is caught here, before it is buffered.
  // (Beast's own limit would close at once, dropping the answers still queued, and its teardown leaves the
  // rest of the message unread, so the client sees a reset instead of the close frame.)
  void do_read() {
    ws_.async_read_some(in_, kReadPiece, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->closed();  // Beast has sent 1002/1007 itself for a protocol or UTF-8 error
      // A slow reader was shed: the close handshake reads what is left.
      if (self->state_ != State::Open) return;
      // The frame header tells the whole frame's length: an oversized message is refused at its first piece,
      // before the requests ahead of it can finish (read_size_hint: what remains of the frame being read).
      const size_t announced = self->in_.size() + (self->ws_.is_message_done() ? 0 : self->ws_.read_size_hint(1));
      if (announced > self->ctx_.options.max_body_bytes)
        return self->close_after_answers(
            ws::close_code::too_big, "message exceeds " + std::to_string(self->ctx_.options.max_body_bytes) + " bytes");
      if (!self->ws_.is_message_done()) return self->do_read();
      std::string text = beast::buffers_to_string(self->in_.data());
      self->in_.consume(self->in_.size());
      self->on_message(text);
      self->do_read();
    });
  }

  // Reading stops; requests still running are aborted and end with their `abort` messages; once every
  // answer is written the close frame goes out (Beast's close drains the rest of the client's message).
  void close_after_answers(ws::close_code code, std::string reason) {
    spdlog::info("websocket closing with {}: {}; aborting {} request(s)", int(code), reason, live_.size());
    state_ = State::Closing;
    closing_hold_ = shared_from_this();  // no read is pending now, and the engine's sinks hold the session weakly
    close_reason_ = ws::close_reason(code, reason);
    in_.clear();
    for (auto& [id, live] : live_) ctx_.engine->abort(live.gen->unfinished_req_ids());
    write_next();
  }

  void on_message(const std::string& text) {
    const WsSessionState state{[this](const std::string& id) { return live_.count(id) > 0; }, int(live_.size()),
                               ctx_.options.max_ws_requests};
    WsMessage message = parse_ws_message(text, ctx_.serving, state);
    if (auto* e = std::get_if<WsError>(&message)) return send(websocket_error(e->error, e->id));
    if (auto* cancel = std::get_if<WsCancel>(&message)) {
      ctx_.engine->abort(live_.at(cancel->id).gen->unfinished_req_ids());  // its `abort` outputs end it
      return;
    }
    auto& [id, request] = std::get<WsStart>(message);
    if (auto e = admission_error(admission(ctx_))) return send(websocket_error(*e, id));
    if (ctx_.serving.pooling != PoolingType::None)
      return send(
          websocket_error(api_error(400, ctx_.serving.pooling == PoolingType::Rank
                                             ? "This model reranks (--task rerank): use /v1/rerank or /v1/score."
                                             : "This model serves embeddings (--task embed): use /v1/embeddings."),
                          id));
    const Endpoint ep = request.endpoint;
    auto gen = std::make_unique<Generation>(std::move(request), new_request_id(ctx_, traits_of(ep).id_prefix),
                                            epoch_seconds(), *ctx_.serving.tokenizer, Transport::WebSocket, id);
    spdlog::info("{} on websocket as {}, n={}{}{}", gen->id(), log_excerpt(id), gen->request().params.n,
                 gen->request().user.empty() ? "" : ", user=", log_excerpt(gen->request().user));
    note_ignored_fields(ctx_, gen->id(), gen->request().ignored_fields);
    auto specs = gen->engine_requests();
    auto registered = register_live(ctx_, *gen, specs);
    live_.emplace(id,
                  Live{std::move(gen), std::make_unique<LiveGeneration>(ctx_.live_generations), std::move(registered)});
    ctx_.engine->submit(std::move(specs),
                        std::make_shared<StrandSink<WsSession>>(weak_from_this(), ws_.get_executor(), id));
  }

  // A generation's last message is queued: it stays live (shutdown waits) until the outbox is written.
  void retire(const std::string& client_id) {
    auto it = live_.find(client_id);
    flushing_.push_back(std::move(it->second.counted));
    live_.erase(it);
    write_next();
  }
  void send(std::string text) {
    if (state_ == State::Closed) return;
    backlog_bytes_ += text.size();
    outbox_.push_back(std::move(text));
    write_next();
    // Shed on a handler of its own: the caller may hold a generation that shedding ends.
    if (state_ == State::Open && backlog_bytes_ > ctx_.options.max_output_backlog_bytes)
      net::post(ws_.get_executor(), [self = shared_from_this()] { self->shed_slow_reader(); });
  }
  void write_next() {
    if (state_ == State::Closed || writing_) return;
    if (outbox_.empty()) {
      flushing_.clear();
      if (state_ == State::Closing && live_.empty()) send_close();
      return;
    }
    writing_ = true;
    current_ = std::move(outbox_.front());
    outbox_.pop_front();
    backlog_bytes_ -= current_.size();
    ws_.text(true);
    watch_write();
    ws_.async_write(net::buffer(current_), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->write_ended();
      self->writing_ = false;
      if (ec) return self->closed();
      self->write_next();
    });
  }

  void send_close() {
    state_ = State::Closed;
    watch_write();
    ws_.async_close(close_reason_, [self = shared_from_this()](beast::error_code) {
      self->write_ended();
      self->closing_hold_.reset();
    });
  }

  // A write (a message or the close frame) must end within --write-timeout; Beast's own timeouts watch reads only.
  void watch_write() {
    write_timer_.expires_after(std::chrono::seconds(ctx_.options.write_timeout_s));
    write_timer_.async_wait([self = shared_from_this(), epoch = ++write_epoch_](beast::error_code ec) {
      if (!ec && epoch == self->write_epoch_) self->cut_slow_reader();
    });
  }
  void write_ended() {
    ++write_epoch_;
    write_timer_.cancel();
  }

  // The client has not taken a write within the timeout: its requests are aborted and the socket reset (the
  // kernel's unsent bytes dropped with it); no close frame could reach a client that does not read.
  void cut_slow_reader() {
    const bool shed = state_ != State::Open && close_reason_.code == ws::close_code::policy_error;
    if (!shed) ctx_.connections.on_cut(ConnectionMetrics::kWriteTimeout);  // a shed connection was counted then
    spdlog::info(
        "websocket: no write ended within --write-timeout {} s; cutting the connection, aborting {} request(s)",
        ctx_.options.write_timeout_s, live_.size());
    closed();
    beast::error_code ec;
    auto& socket = beast::get_lowest_layer(ws_).socket();
    socket.set_option(net::socket_base::linger(true, 0), ec);
    socket.close(ec);
  }

  // Output queued unread past --max-output-backlog-bytes: the requests are aborted and the queue dropped; the
  // close (1008) follows the write in flight, which the write timeout cuts if the client never takes it.
  void shed_slow_reader() {
    if (state_ != State::Open) return;  // an earlier post shed it, or the socket closed meanwhile
    ctx_.connections.on_cut(ConnectionMetrics::kOutputBacklog);
    spdlog::info("websocket: {} bytes of output unread (--max-output-backlog-bytes); 1008, aborting {} request(s)",
                 backlog_bytes_, live_.size());
    abort_all();
    state_ = State::Closing;
    closing_hold_ = shared_from_this();  // the engine's sinks hold the session weakly
    close_reason_ = ws::close_reason(ws::close_code::policy_error, "output unread past --max-output-backlog-bytes");
    write_next();
  }

  // The socket is gone: every generation still running on it is aborted.
  void closed() {
    if (state_ == State::Closed) return;
    state_ = State::Closed;
    abort_all();
    closing_hold_.reset();
    write_timer_.cancel();
  }

  // Every generation is aborted and forgotten (its `abort` outputs find nothing), and what was queued is dropped.
  void abort_all() {
    for (auto& [id, live] : live_) ctx_.engine->abort(live.gen->unfinished_req_ids());
    live_.clear();
    outbox_.clear();
    backlog_bytes_ = 0;
    flushing_.clear();
  }

  ServerContext& ctx_;
  ws::stream<beast::tcp_stream> ws_;
  beast::flat_buffer in_;
  struct Live {
    std::unique_ptr<Generation> gen;
    std::unique_ptr<LiveGeneration> counted;
    std::unique_ptr<LiveRequests::Entry> registered;  // abortable by id from /admin while it runs
  };
  std::map<std::string, Live> live_;
  std::vector<std::unique_ptr<LiveGeneration>> flushing_;  // ended generations whose last message is still queued
  std::deque<std::string> outbox_;
  size_t backlog_bytes_ = 0;  // the outbox's bytes: what waits behind the write in flight (current_)
  std::string current_;
  net::steady_timer write_timer_;
  uint64_t write_epoch_ = 0;  // a timer that fired for a write already ended does nothing
  bool writing_ = false;
  // Open: messages are read. Closing: a close is owed once what is queued is written (the answers after a 1009,
  // nothing after a slow reader is shed). Closed: the socket is done.
  enum class State { Open, Closing, Closed } state_ = State::Open;
  ws::close_reason close_reason_;
  std::shared_ptr<WsSession> closing_hold_;
  static constexpr size_t kReadPiece = 64 * 1024;
};

}  // namespace

void start_websocket(ServerContext& ctx, beast::tcp_stream stream, beast::http::request<beast::http::string_body> req) {
  std::make_shared<WsSession>(ctx, std::move(stream))->run(std::move(req));
}

}  // namespace parley::http
