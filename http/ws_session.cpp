// Websocket /v1/ws: several generations multiplexed on one socket, each tagged with the client's id.
//   -> {"type": "request", "id": "a1", "endpoint": "completions" | "chat.completions", "body": {...OpenAI body...}}
//   -> {"type": "cancel", "id": "a1"}
//   <- {"id": "a1", "type": "delta", "index": 0, "text": "...", "token_ids": [...]}   (finish_reason on the last)
//   <- {"id": "a1", "type": "final", "choices": [...], "usage": {...}}
//   <- {"id": "a1", "type": "error", "error": {...}}
#include <spdlog/spdlog.h>

#include <deque>
#include <map>

#include "http/log_text.hpp"
#include "http/session_common.hpp"
#include "http/ws_protocol.hpp"

namespace parley::http {
namespace {

namespace ws = beast::websocket;

class WsSession : public std::enable_shared_from_this<WsSession> {
 public:
  WsSession(ServerContext& ctx, beast::tcp_stream stream) : ctx_(ctx), ws_(std::move(stream)) {}
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
    const Endpoint ep = request.endpoint;
    auto gen = std::make_unique<Generation>(std::move(request),
                                            new_request_id(ctx_, ep == Endpoint::Completions ? "cmpl" : "chatcmpl"),
                                            epoch_seconds(), *ctx_.serving.tokenizer, Transport::WebSocket, id);
    spdlog::info("{} on websocket as {}, n={}{}{}", gen->id(), log_excerpt(id), gen->request().params.n,
                 gen->request().user.empty() ? "" : ", user=", log_excerpt(gen->request().user));
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
    outbox_.push_back(std::move(text));
    write_next();
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
    ws_.text(true);
    ws_.async_write(net::buffer(current_), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->writing_ = false;
      if (ec) return self->closed();
      self->write_next();
    });
  }

  void send_close() {
    state_ = State::Closed;
    ws_.async_close(close_reason_, [self = shared_from_this()](beast::error_code) { self->closing_hold_.reset(); });
  }

  // The socket is gone: every generation still running on it is aborted.
  void closed() {
    if (state_ == State::Closed) return;
    state_ = State::Closed;
    for (auto& [id, live] : live_) ctx_.engine->abort(live.gen->unfinished_req_ids());
    live_.clear();
    outbox_.clear();
    flushing_.clear();
    closing_hold_.reset();
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
  std::string current_;
  bool writing_ = false;
  // Open: messages are read. Closing: a close is owed once the answers are written. Closed: the socket is done.
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
