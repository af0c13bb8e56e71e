// One HTTP/1.1 connection. Requests are read all the time (pipelined ones queue up in the RequestReader,
// and the same read notices a client that goes away mid-generation), answered one at a time in arrival
// order, and every answer's bytes go through one outbox with one write in flight. The connection stays
// open as the client asks; after a refusal it closes gracefully: our side shut, the client's bytes read and
// dropped for a bounded time, so the client reads the status instead of a reset.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <array>
#include <deque>

#include "http/admin_actions.hpp"
#include "http/admin_json.hpp"
#include "http/endpoints.hpp"
#include "http/log_text.hpp"
#include "http/request_reader.hpp"
#include "http/session_common.hpp"

namespace parley::http {
namespace {

namespace bhttp = beast::http;

constexpr size_t kMaxPipelined = 16;         // requests waiting behind the one being answered; the next gets 503
constexpr int kLingerSeconds = 5;            // after the last answer, the client's leftovers are drained this long
constexpr size_t kLingerBytes = 256u << 20;  // ... and up to this many bytes (a large upload refused with 413)

enum class BodyFraming { Length, Chunked, UntilClose };

using Headers = std::vector<std::pair<std::string, std::string>>;

std::string response_head(int status, const std::string& type, BodyFraming framing, size_t length, bool keep_alive,
                          const Headers& extra = {}) {
  std::string h = "HTTP/1.1 " + std::to_string(status) + " " +
                  std::string(bhttp::obsolete_reason(bhttp::status(status))) +
                  "\r\nServer: parley\r\nContent-Type: " + type + "\r\n";
  if (status == 503) h += "Retry-After: 1\r\n";  // a full queue or a drain: the client may try again (RFC 9110)
  for (const auto& [name, value] : extra) h += name + ": " + value + "\r\n";
  if (framing == BodyFraming::Length)
    h += "Content-Length: " + std::to_string(length) + "\r\n";
  else
    h += "Cache-Control: no-cache\r\n";
  if (framing == BodyFraming::Chunked) h += "Transfer-Encoding: chunked\r\n";
  h += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return h;
}

std::string body_piece(BodyFraming framing, const std::string& text) {
  if (framing != BodyFraming::Chunked) return text;
  char size[20];
  std::snprintf(size, sizeof size, "%zx\r\n", text.size());
  return size + text + "\r\n";
}

std::string error_json(int status, const std::string& message) { return error_body(api_error(status, message)); }

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(ServerContext& ctx, tcp::socket socket)
      : ctx_(ctx),
        stream_(std::move(socket)),
        deadline_timer_(stream_.get_executor()),
        reader_({ctx.options.max_body_bytes, RequestReader::Limits{}.max_header_bytes, kMaxPipelined}) {}
  ~HttpSession() {
    if (conn_ != Conn::HandedOver) ctx_.connections.on_closed();
  }

  // over_limit: the server has too many connections open: this one is answered 503 and closed.
  void start(bool over_limit) {
    if (over_limit)
      reader_.refuse(503, "The server has " + std::to_string(ctx_.options.max_connections) +
                              " connections open (--max-connections); retry later.");
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->serve_next();
      self->update_deadline();
      self->read_more();
    });
  }

  void on_engine_output(const std::string&, const RequestOutput& out) {
    if (!gen_ || conn_ == Conn::Closed) return;
    std::string text = gen_->gen->on_output(out);
    if (!text.empty()) send_body(std::move(text));
    if (backlog_bytes() > ctx_.options.max_output_backlog_bytes)
      return cut_slow_reader(ConnectionMetrics::kOutputBacklog,
                             std::to_string(backlog_bytes()) + " bytes of output unread (--max-output-backlog-bytes)");
    if (!gen_->gen->done()) return;
    if (const auto& failed = gen_->gen->failure())
      return finish_generation(gen_->gen->error_text(*failed), failed->status);
    // Stored before the client reads the end: a previous_response_id sent right after finds it.
    if (auto stored = gen_->gen->stored_response()) ctx_.responses.put(gen_->gen->id(), std::move(*stored));
    finish_generation(gen_->gen->closing_text());
  }
  // Admitted: a stream can commit to 200 now (a refusal before this gets its own status).
  void on_engine_admitted(const std::string&) {
    if (gen_ && conn_ != Conn::Closed) send_head();
  }
  void on_engine_rejected(const std::string&, int status, const std::string& message) {
    if (!gen_ || conn_ == Conn::Closed) return;
    if (gen_->head_sent) return finish_generation(gen_->gen->error_text(api_error(status, message)), status);
    const bool keep_alive = gen_->keep_alive;
    const std::string body = gen_->gen->error_json(api_error(status, message));  // in the API's own shape
    gen_.reset();
    answer(status, body, "application/json", keep_alive);
  }

 private:
  // Open: requests are read and answered. Closing: the last answer is queued, the rest is not read.
  // Lingering: it is written and our side shut; the client's bytes are dropped until it closes (bounded).
  enum class Conn { Open, Closing, Lingering, Closed, HandedOver };
  // The client's sending side: no read pending, one read in flight (never more), or shut by the client.
  enum class Input { Idle, Reading, Ended };
  // What the deadline timer guards: an idle keep-alive wait, a request arriving, the linger.
  enum class Deadline { None, Idle, Request, Linger };

  struct Piece {
    std::string bytes;
    std::unique_ptr<LiveGeneration> live;  // a generation's last bytes: shutdown waits until they are written
  };
  struct GenerationInFlight {
    std::unique_ptr<Generation> gen;
    std::unique_ptr<LiveGeneration> live;
    BodyFraming framing;
    bool keep_alive;
    bool head_sent = false;             // streams only
    std::shared_ptr<HttpSession> hold;  // the engine's sink holds the session weakly, and a read may not be pending
    std::unique_ptr<LiveRequests::Entry> registered;  // abortable by id from /admin while it runs
  };

  // --- Reading ----------------------------------------------------------------------------------
  void read_more() {
    if (input_ != Input::Idle || conn_ == Conn::Closed || conn_ == Conn::HandedOver) return;
    if (reader_.state() == RequestReader::State::Upgrade) return;  // what follows belongs to the websocket
    input_ = Input::Reading;
    stream_.socket().async_read_some(
        net::buffer(inbuf_), [self = shared_from_this()](beast::error_code ec, size_t n) { self->on_bytes(ec, n); });
  }

  void on_bytes(beast::error_code ec, size_t n) {
    input_ = Input::Idle;
    if (conn_ == Conn::Closed || conn_ == Conn::HandedOver) return;
    if (ec) return on_peer_gone(ec == net::error::eof);
    if (conn_ == Conn::Lingering) {
      lingered_bytes_ += n;
      return lingered_bytes_ > kLingerBytes ? close() : read_more();
    }
    reader_.feed({inbuf_.data(), n});  // after a refusal, dropped
    serve_next();
    update_deadline();
    read_more();
  }

  // End of stream or a reset. A generation in flight is aborted; requests already read are still answered
  // after a clean end of stream (a client may shut its sending side and wait for the answers).
  void on_peer_gone(bool end_of_stream) {
    if (conn_ == Conn::Lingering || !end_of_stream || gen_ || feed_timer_) return client_disconnected();
    input_ = Input::Ended;
    serve_next();
    update_deadline();
  }

  void client_disconnected() {
    abort_generation("client disconnected");
    close();
  }

  // A client that does not read what it asked for holds its output here: the connection is reset (the
  // kernel's unsent bytes dropped with it) and its generation aborted, as if it had gone.
  void cut_slow_reader(const char* reason, const std::string& why) {
    ctx_.connections.on_cut(reason);
    if (!gen_) spdlog::info("{}: {}; cutting the connection", peer_address(), why);
    abort_generation(why + "; cutting the connection");
    beast::error_code ec;
    stream_.socket().set_option(net::socket_base::linger(true, 0), ec);
    close();
  }

  void abort_generation(const std::string& why) {
    if (!gen_) return;
    spdlog::info("{}: {}; aborting {} request(s)", gen_->gen->id(), why, gen_->gen->unfinished_req_ids().size());
    ctx_.engine->abort(gen_->gen->unfinished_req_ids());
  }

  // --- Answering, one request at a time ---------------------------------------------------------
  void serve_next() {
    if (answering_ || conn_ != Conn::Open) return;
    std::optional<Incoming> in = reader_.pop();
    if (!in) {
      if (input_ == Input::Ended || reader_.state() == RequestReader::State::Refused) finish_connection();
      return;
    }
    answering_ = true;
    if (in->kind == Incoming::Kind::Refusal) {
      ctx_.connections.on_refused(in->status);
      spdlog::info("refused a request with {}: {}", in->status, in->message);
      return answer(in->status, error_json(in->status, in->message), "application/json", false);
    }
    serve(std::move(in->request));
  }

  void serve(bhttp::request<bhttp::string_body> req) {
    const bool websocket = beast::websocket::is_upgrade(req);
    const bool keep_alive =
        req.keep_alive() && !websocket && !ctx_.draining;  // a refused upgrade closes, as all do at shutdown
    HttpRequestView view{std::string(req.method_string()),
                         std::string(req.target()),
                         std::string(req[bhttp::field::authorization]),
                         websocket ? std::string() : std::move(req.body()),
                         std::string(req[bhttp::field::origin]),
                         std::string(req[bhttp::field::host]),
                         int(req.count(bhttp::field::authorization)),
                         admission(ctx_),
                         websocket,
                         std::string(req["x-api-key"])};
    RouteResult r = handle_request(view, ctx_.options.router, ctx_.serving, &ctx_.responses);
    switch (r.kind) {
      case RouteResult::Kind::Respond:
        return answer(r.status, std::move(r.body), r.content_type, keep_alive, r.headers);
      case RouteResult::Kind::WebSocket:
        upgrade_.emplace(std::move(req));
        if (outbox_.empty()) outbox_written();  // else the socket is handed over once the answers before it are written
        return;
      case RouteResult::Kind::AdminEvents:
        return start_feed();
      case RouteResult::Kind::AdminAction: {
        auto reply = [self = shared_from_this(), ex = stream_.get_executor(), keep_alive](int status,
                                                                                          std::string body) {
          net::post(ex, [self, status, keep_alive, body = std::move(body)]() mutable {
            if (self->conn_ == Conn::Open) self->answer(status, std::move(body), "application/json", keep_alive);
          });
        };
        return run_admin_action(ctx_, *r.action, peer_address(), reply);
      }
      case RouteResult::Kind::Metrics:
      case RouteResult::Kind::AdminActors:
      case RouteResult::Kind::AdminRequests:
        return ask_engine(r.kind, r.content_type, keep_alive);
      case RouteResult::Kind::Generate:
        return start_generation(std::move(*r.generate), keep_alive, req.version());
    }
  }

  // The answer comes from the engine's actors; the callback holds the session until then.
  void ask_engine(RouteResult::Kind kind, std::string type, bool keep_alive) {
    const bool metrics = kind == RouteResult::Kind::Metrics;
    auto reply = [self = shared_from_this(), ex = stream_.get_executor(), type, keep_alive, metrics](std::string text) {
      net::post(ex, [self, type, keep_alive, metrics, text = std::move(text)]() mutable {
        if (self->conn_ != Conn::Open) return;
        if (metrics) text += self->ctx_.connections.render();
        self->answer(200, std::move(text), type, keep_alive);
      });
    };
    if (metrics)
      ctx_.engine->metrics(reply);
    else if (kind == RouteResult::Kind::AdminActors)
      ctx_.engine->admin_actors([reply](const std::vector<std::vector<ActorView>>& v) { reply(admin_actors_json(v)); });
    else
      ctx_.engine->admin_requests([reply](const std::vector<EngineView>& v) { reply(admin_requests_json(v)); });
  }

  void answer(int status, std::string body, const std::string& type, bool keep_alive, const Headers& headers = {}) {
    enqueue({response_head(status, type, BodyFraming::Length, body.size(), keep_alive, headers) + body, nullptr});
    answer_done(keep_alive);
  }

  std::string peer_address() {
    beast::error_code ec;
    const auto ep = stream_.socket().remote_endpoint(ec);
    return ec ? "an unknown client" : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  // GET /admin/events: the admin view as Server-Sent Events twice a second, from the last snapshot (with its
  // age), until the client goes. A client that reads slowly skips events instead of queueing them.
  void start_feed() {
    enqueue({response_head(200, "text/event-stream", BodyFraming::Chunked, 0, false), nullptr});
    feed_timer_.emplace(stream_.get_executor());
    feed_event();
  }
  void feed_event() {
    if (conn_ != Conn::Open) return;
    if (outbox_.empty()) {  // the last event is written: no backlog for a slow reader
      const AdminSnapshots::View v = ctx_.admin_snapshots.current(*ctx_.engine);
      const std::string event =
          "data: {\"age_ms\":" + std::to_string(v.age_ms) + ",\"draining\":" + (ctx_.admin_drained ? "true" : "false") +
          ",\"log_level\":\"" + std::string(spdlog::level::to_string_view(spdlog::get_level()).data()) +
          "\",\"requests\":" + v.requests + ",\"actors\":" + v.actors +
          ",\"metrics\":" + nlohmann::json(v.metrics).dump() +
          (ctx_.options.admin_show_prompts  // a prompt cut at 200 bytes may end inside a UTF-8 sequence
               ? ",\"prompts\":" + nlohmann::json(ctx_.live_requests.prompts())
                                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
               : "") +
          "}\n\n";
      enqueue({body_piece(BodyFraming::Chunked, event), nullptr});
    }
    feed_timer_->expires_after(std::chrono::milliseconds(500));
    feed_timer_->async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->feed_event();
    });
  }

  // The answer's bytes are queued: the next request may be served (its bytes queue behind).
  void answer_done(bool keep_alive) {
    answering_ = false;
    if (!keep_alive) return finish_connection();
    serve_next();
    update_deadline();
  }

  void start_generation(GenerateRequest req, bool keep_alive, unsigned version) {
    const char* id_prefix = traits_of(req.endpoint).id_prefix;
    const bool stream = req.stream;
    // HTTP/1.0 has no chunked encoding: a stream's end is the connection's end.
    const BodyFraming framing = !stream         ? BodyFraming::Length
                                : version == 10 ? BodyFraming::UntilClose
                                                : BodyFraming::Chunked;
    auto gen = std::make_unique<Generation>(std::move(req), new_request_id(ctx_, id_prefix), epoch_seconds(),
                                            *ctx_.serving.tokenizer, stream ? Transport::Sse : Transport::Json);
    spdlog::info("{} {} prompt(s), n={}, max_tokens={}, stream={}{}{}", gen->id(), gen->request().prompts.size(),
                 gen->request().params.n, gen->request().params.max_tokens, stream,
                 gen->request().user.empty() ? "" : ", user=", log_excerpt(gen->request().user));
    note_ignored_fields(ctx_, gen->id(), gen->request().ignored_fields);
    auto specs = gen->engine_requests();
    auto sink = std::make_shared<StrandSink<HttpSession>>(weak_from_this(), stream_.get_executor(), gen->id());
    auto registered = register_live(ctx_, *gen, specs);
    gen_.emplace(GenerationInFlight{std::move(gen), std::make_unique<LiveGeneration>(ctx_.live_generations), framing,
                                    keep_alive && framing != BodyFraming::UntilClose, false, shared_from_this(),
                                    std::move(registered)});
    ctx_.engine->submit(std::move(specs), sink);
  }

  void send_head() {
    if (gen_->framing == BodyFraming::Length || gen_->head_sent) return;
    gen_->head_sent = true;
    enqueue({response_head(200, "text/event-stream", gen_->framing, 0, gen_->keep_alive), nullptr});
  }

  void send_body(std::string text) {
    if (gen_->framing == BodyFraming::Length) return;  // a JSON answer is written whole at the end
    send_head();
    enqueue({body_piece(gen_->framing, text), nullptr});
  }

  void finish_generation(std::string closing, int status = 200) {
    GenerationInFlight g = std::move(*gen_);
    gen_.reset();
    if (g.framing == BodyFraming::Length) {
      enqueue({response_head(status, "application/json", BodyFraming::Length, closing.size(), g.keep_alive) + closing,
               std::move(g.live)});
    } else {
      if (!g.head_sent) enqueue({response_head(200, "text/event-stream", g.framing, 0, g.keep_alive), nullptr});
      std::string tail = body_piece(g.framing, closing);
      if (g.framing == BodyFraming::Chunked) tail += "0\r\n\r\n";
      enqueue({std::move(tail), std::move(g.live)});
    }
    answer_done(g.keep_alive);
  }

  // --- Writing: one write in flight, the outbox's front (Beast's queue: a non-empty outbox is a write in flight) --
  void enqueue(Piece piece) {
    outbox_bytes_ += piece.bytes.size();
    outbox_.push_back(std::move(piece));
    if (outbox_.size() == 1) write_front();
  }

  // What waits behind the write in flight: the client's unread backlog (one large answer alone is not one).
  size_t backlog_bytes() const { return outbox_.empty() ? 0 : outbox_bytes_ - outbox_.front().bytes.size(); }

  void write_front() {
    if (conn_ == Conn::Closed || conn_ == Conn::HandedOver) return;
    stream_.expires_after(std::chrono::seconds(ctx_.options.write_timeout_s));  // a client that stops reading
    net::async_write(stream_, net::buffer(outbox_.front().bytes),
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->on_written(ec); });
  }

  void on_written(beast::error_code ec) {
    outbox_bytes_ -= outbox_.front().bytes.size();
    outbox_.pop_front();  // its LiveGeneration with it
    if (ec == beast::error::timeout)
      return cut_slow_reader(ConnectionMetrics::kWriteTimeout, "no write ended within --write-timeout " +
                                                                   std::to_string(ctx_.options.write_timeout_s) + " s");
    if (ec) return client_disconnected();
    if (!outbox_.empty()) return write_front();
    outbox_written();
  }

  // Everything queued is written: a websocket takes the socket over, a closing connection lingers, else it idles.
  void outbox_written() {
    if (conn_ == Conn::Closed || conn_ == Conn::HandedOver) return;
    if (upgrade_) return hand_over();
    if (conn_ == Conn::Closing) return linger();
    update_deadline();
  }

  void hand_over() {
    conn_ = Conn::HandedOver;
    deadline_timer_.cancel();
    stream_.expires_never();
    start_websocket(ctx_, std::move(stream_), std::move(*upgrade_));
  }

  // --- Closing ----------------------------------------------------------------------------------
  // No more requests are read; what is queued is written, then the connection lingers and closes.
  void finish_connection() {
    if (conn_ != Conn::Open) return;
    conn_ = Conn::Closing;
    if (outbox_.empty()) outbox_written();  // else the write in flight gets there
  }

  // Our side is shut; the client's remaining bytes are read and dropped until it closes, so that unread
  // bytes do not turn our close into a reset that destroys the answer before the client reads it.
  void linger() {
    conn_ = Conn::Lingering;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec || input_ == Input::Ended) return close();
    update_deadline();
    read_more();
  }

  void close() {
    if (conn_ == Conn::Closed || conn_ == Conn::HandedOver) return;
    conn_ = Conn::Closed;
    gen_.reset();
    if (!outbox_.empty()) {
      outbox_.erase(outbox_.begin() + 1, outbox_.end());  // the front's write is in flight: its buffer stays
      outbox_bytes_ = outbox_.front().bytes.size();
    }
    deadline_timer_.cancel();
    if (feed_timer_) feed_timer_->cancel();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  // --- Deadlines --------------------------------------------------------------------------------
  Deadline wanted_deadline() const {
    if (conn_ == Conn::Lingering) return Deadline::Linger;
    if (conn_ != Conn::Open) return Deadline::None;
    if (input_ != Input::Ended && reader_.mid_request()) return Deadline::Request;  // from the request's first byte
    if (!answering_ && outbox_.empty() && reader_.queued() == 0 && input_ != Input::Ended) return Deadline::Idle;
    return Deadline::None;
  }

  void update_deadline() {
    const Deadline want = wanted_deadline();
    if (want == deadline_) return;
    deadline_ = want;
    ++deadline_epoch_;
    deadline_timer_.cancel();
    if (want == Deadline::None) return;
    const int seconds = want == Deadline::Idle      ? ctx_.options.idle_timeout_s
                        : want == Deadline::Request ? ctx_.options.read_timeout_s
                                                    : kLingerSeconds;
    deadline_timer_.expires_after(std::chrono::seconds(seconds));
    deadline_timer_.async_wait([self = shared_from_this(), epoch = deadline_epoch_](beast::error_code ec) {
      if (!ec && epoch == self->deadline_epoch_) self->on_deadline();
    });
  }

  void on_deadline() {
    const Deadline what = deadline_;
    deadline_ = Deadline::None;
    if (what == Deadline::Request) {
      reader_.refuse(
          408, "The request did not arrive whole within " + std::to_string(ctx_.options.read_timeout_s) + " seconds.");
      serve_next();
      return update_deadline();
    }
    close();  // idle keep-alive, or the linger is over
  }

  ServerContext& ctx_;
  beast::tcp_stream stream_;
  net::steady_timer deadline_timer_;
  RequestReader reader_;
  std::array<char, 64 * 1024> inbuf_;
  Conn conn_ = Conn::Open;
  Deadline deadline_ = Deadline::None;
  uint64_t deadline_epoch_ = 0;
  Input input_ = Input::Idle;
  bool answering_ = false;  // a request is being answered (its bytes not all queued yet)
  std::optional<GenerationInFlight> gen_;
  std::optional<bhttp::request<bhttp::string_body>> upgrade_;  // handed to a websocket once the outbox is written
  std::deque<Piece> outbox_;                                   // the front is being written
  size_t outbox_bytes_ = 0;                                    // the outbox's bytes, the front's included
  std::optional<net::steady_timer> feed_timer_;                // GET /admin/events
  size_t lingered_bytes_ = 0;
};

}  // namespace

void start_http_session(ServerContext& ctx, tcp::socket socket) {
  const bool over_limit = ctx.connections.on_accepted() > ctx.options.max_connections;
  std::make_shared<HttpSession>(ctx, std::move(socket))->start(over_limit);
}

}  // namespace parley::http
