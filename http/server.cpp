// Listener and HTTP session: read a request, route it (http/router.hpp), answer, or run a generation
// and stream it. One write in flight per session; engine outputs arrive through a StrandSink.
#include <spdlog/spdlog.h>

#include <deque>
#include <thread>

#include "http/chat_prompt.hpp"
#include "http/session_common.hpp"

namespace parley::http {

namespace bhttp = beast::http;

std::string new_request_id(ServerContext& ctx, const char* prefix) {
  static const uint64_t boot = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%08llx%06llx", prefix, (unsigned long long)(boot & 0xffffffffu),
                (unsigned long long)ctx.next_id.fetch_add(1));
  return buf;
}

long epoch_seconds() {
  return long(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

namespace {

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(ServerContext& ctx, tcp::socket socket) : ctx_(ctx), stream_(std::move(socket)) {}

  void start() { net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); }); }

  void on_engine_output(const std::string&, const RequestOutput& out) {
    if (!gen_ || client_gone_) return;
    std::string text = gen_->on_output(out);
    if (!text.empty()) send_chunk(std::move(text));
    if (!gen_->done()) return;
    if (const auto& failed = gen_->failure()) finish_generation(gen_->error_text(*failed), failed->status);
    else finish_generation(gen_->closing_text());
  }
  // Admitted: a streaming response can commit to 200 now (a refusal before this gets its own status).
  void on_engine_admitted(const std::string&) {
    if (!gen_ || client_gone_ || !streaming_) return;
    header_.emplace(bhttp::status::ok, 11);
    header_->set(bhttp::field::server, "parley");
    header_->set(bhttp::field::content_type, "text/event-stream");
    header_->set(bhttp::field::cache_control, "no-cache");
    header_->keep_alive(false);  // a generation ends its connection: no read may race the watch below
    header_->chunked(true);
    serializer_.emplace(*header_);
    writing_ = true;
    bhttp::async_write_header(stream_, *serializer_, [self = shared_from_this()](beast::error_code ec, size_t) {
      self->writing_ = false;
      if (ec) return self->client_disconnected();
      self->header_sent_ = true;
      self->write_next();
    });
  }
  void on_engine_rejected(const std::string&, int status, const std::string& message) {
    if (!gen_ || client_gone_) return;
    ApiError e;
    e.status = status, e.message = message, e.type = status == 503 ? "ServiceUnavailableError" : "BadRequestError";
    finished_ = true;
    gen_.reset();
    respond(status, error_body(e), "application/json", false);  // live until written: close() ends it
  }

 private:
  void do_read() {
    parser_.emplace();
    parser_->body_limit(ctx_.options.max_body_bytes);
    // The idle timeout covers the wait for a request to start; once bytes come the read timeout applies.
    stream_.expires_after(std::chrono::seconds(buffer_.size() ? ctx_.options.read_timeout_s : ctx_.options.idle_timeout_s));
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == bhttp::error::body_limit) {
      ApiError e;
      e.status = 413, e.type = "RequestEntityTooLarge";
      e.message = "Request body exceeds the limit of " + std::to_string(ctx_.options.max_body_bytes) + " bytes.";
      return respond(413, error_body(e), "application/json", false);
    }
    if (ec) return close();  // end of stream, timeout, reset, or a malformed request line
    auto req = parser_->release();
    if (beast::websocket::is_upgrade(req)) {
      if (req.target() != "/v1/ws")
        return respond(404, error_body({404, "Not Found: " + std::string(req.target()), "NotFoundError", "", ""}),
                       "application/json", false);
      HttpRequestView view{"GET", std::string(req.target()), std::string(req[bhttp::field::authorization]), ""};
      if (!ctx_.options.router.api_key.empty() && !bearer_matches(view.authorization, ctx_.options.router.api_key))
        return respond(401, error_body({401, "Unauthorized", "AuthenticationError", "", "invalid_api_key"}),
                       "application/json", false);
      return start_websocket(ctx_, std::move(stream_), std::move(req));
    }
    keep_alive_ = req.keep_alive();
    HttpRequestView view{std::string(req.method_string()), std::string(req.target()),
                         std::string(req[bhttp::field::authorization]), std::move(req.body())};
    RouteResult r = handle_request(view, ctx_.options.router, ctx_.serving);
    switch (r.kind) {
      case RouteResult::Kind::Respond:
      case RouteResult::Kind::WebSocket: return respond(r.status, std::move(r.body), r.content_type, keep_alive_);
      case RouteResult::Kind::Metrics:
      case RouteResult::Kind::AdminActors:
      case RouteResult::Kind::AdminRequests: {
        // The callback owns the session until the answer comes (nothing else is pending on it).
        auto ex = stream_.get_executor();
        auto reply = [self = shared_from_this(), ex, type = r.content_type](std::string text) {
          net::post(ex, [self, type, text = std::move(text)] { self->respond(200, text, type, self->keep_alive_); });
        };
        stream_.expires_after(std::chrono::seconds(ctx_.options.read_timeout_s));
        if (r.kind == RouteResult::Kind::Metrics) ctx_.engine->metrics(reply);
        else if (r.kind == RouteResult::Kind::AdminActors) ctx_.engine->admin_actors(reply);
        else ctx_.engine->admin_requests(reply);
        return;
      }
      case RouteResult::Kind::Generate:
        if (ctx_.draining) {  // a request read on an open connection after SIGTERM
          ApiError e;
          e.status = 503, e.message = kShuttingDown, e.type = "ServiceUnavailableError";
          return respond(503, error_body(e), "application/json", false);
        }
        return start_generation(std::move(*r.generate));
    }
  }

  void start_generation(GenerateRequest req) {
    const bool chat = req.endpoint == Endpoint::ChatCompletions;
    streaming_ = req.stream;
    gen_ = std::make_unique<Generation>(std::move(req), new_request_id(ctx_, chat ? "chatcmpl" : "cmpl"), epoch_seconds(),
                                        *ctx_.serving.tokenizer, streaming_ ? Transport::Sse : Transport::Json);
    spdlog::info("{} {} prompt(s), n={}, max_tokens={}, stream={}{}{}", gen_->id(), gen_->request().prompts.size(),
                 gen_->request().params.n, gen_->request().params.max_tokens, streaming_,
                 gen_->request().user.empty() ? "" : ", user=", gen_->request().user);
    live_.emplace(ctx_.live_generations);
    stream_.expires_never();
    watch_for_disconnect();
    auto sink = std::make_shared<StrandSink<HttpSession>>(weak_from_this(), stream_.get_executor(), gen_->id());
    ctx_.engine->submit(gen_->engine_requests(), sink);
  }

  // A read while the generation runs: it completes only if the client goes away (or misbehaves).
  void watch_for_disconnect() {
    watch_.emplace();
    stream_.async_read_some(net::buffer(*watch_), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec && ec != net::error::operation_aborted) self->client_disconnected();
    });
  }

  void client_disconnected() {
    if (client_gone_) return;
    client_gone_ = true;
    if (gen_ && !finished_) {
      spdlog::info("{}: client disconnected; aborting {} request(s)", gen_->id(), gen_->unfinished_req_ids().size());
      ctx_.engine->abort(gen_->unfinished_req_ids());
    }
    live_.reset();
    close();
  }

  void send_chunk(std::string text) {
    outbox_.push_back(std::move(text));
    write_next();
  }

  void finish_generation(std::string closing, int status = 200) {
    finished_ = true;  // still live (shutdown waits) until the closing bytes are written: close() ends it
    if (streaming_) {
      send_chunk(std::move(closing));
      last_chunk_pending_ = true;
      write_next();
    } else {
      gen_.reset();
      respond(status, std::move(closing), "application/json", false);
    }
  }

  void write_next() {
    if (writing_ || client_gone_ || (streaming_ && !header_sent_)) return;
    if (outbox_.empty()) {
      if (last_chunk_pending_) {
        last_chunk_pending_ = false;
        writing_ = true;
        net::async_write(stream_, bhttp::make_chunk_last(), [self = shared_from_this()](beast::error_code, size_t) {
          self->writing_ = false;
          self->close();
        });
      }
      return;
    }
    writing_ = true;
    current_ = std::move(outbox_.front());
    outbox_.pop_front();
    net::async_write(stream_, bhttp::make_chunk(net::buffer(current_)), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->writing_ = false;
      if (ec) return self->client_disconnected();
      self->write_next();
    });
  }

  void respond(int status, std::string body, const std::string& type, bool keep_alive) {
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(bhttp::status(status), 11);
    res->set(bhttp::field::server, "parley");
    res->set(bhttp::field::content_type, type);
    res->keep_alive(keep_alive);
    res->body() = std::move(body);
    res->prepare_payload();
    stream_.expires_after(std::chrono::seconds(ctx_.options.read_timeout_s));
    bhttp::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
      if (ec || !res->keep_alive()) return self->close();
      self->do_read();
    });
  }

  void close() {
    live_.reset();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  ServerContext& ctx_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bool keep_alive_ = false;
  // The generation in flight (at most one per connection).
  std::unique_ptr<Generation> gen_;
  std::optional<LiveGeneration> live_;
  bool streaming_ = false, finished_ = false, client_gone_ = false, header_sent_ = false;
  std::optional<bhttp::response<bhttp::empty_body>> header_;
  std::optional<bhttp::response_serializer<bhttp::empty_body>> serializer_;
  std::optional<std::array<char, 512>> watch_;
  std::deque<std::string> outbox_;
  std::string current_;
  bool writing_ = false, last_chunk_pending_ = false;
};

}  // namespace

struct HttpServer::Impl {
  ServerContext ctx;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec) {
        if (ec != net::error::operation_aborted) spdlog::warn("accept: {}", ec.message());
        if (!acceptor.is_open()) return;
      } else {
        std::make_shared<HttpSession>(ctx, std::move(socket))->start();
      }
      accept();
    });
  }
};

HttpServer::HttpServer(EngineClient& engine, ServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->ctx.engine = &engine;
  impl_->ctx.options = std::move(options);
  impl_->ctx.serving.tokenizer = &engine.tokenizer();
  impl_->ctx.serving.model_name = engine.model_name();
  impl_->ctx.serving.max_model_len = engine.max_model_len();
  impl_->ctx.serving.architecture = engine.model_config().arch;
  impl_->ctx.serving.context_length = engine.model_config().max_seq_len;
  impl_->ctx.serving.vocab_size = engine.model_config().vocab_size;
  impl_->ctx.serving.chat_template =
      served_chat_template(engine.chat_template(), impl_->ctx.options.chat_template_file, engine.tokenizer());
  impl_->ctx.serving.max_n = engine.max_n();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  auto& a = impl_->acceptor;
  beast::error_code ec;
  const auto address = net::ip::make_address(impl_->ctx.options.host, ec);
  if (ec) throw std::runtime_error("bad --host " + impl_->ctx.options.host + ": " + ec.message());
  const tcp::endpoint ep(address, static_cast<unsigned short>(impl_->ctx.options.port));
  a.open(ep.protocol());
  a.set_option(net::socket_base::reuse_address(true));
  a.bind(ep, ec);
  if (ec) throw std::runtime_error("cannot bind " + impl_->ctx.options.host + ":" + std::to_string(impl_->ctx.options.port) + ": " + ec.message());
  a.listen(net::socket_base::max_listen_connections);
  impl_->accept();
}

int HttpServer::port() const { return impl_->acceptor.local_endpoint().port(); }

void HttpServer::run() {
  const int n = std::max(1, impl_->ctx.options.io_threads);
  for (int i = 1; i < n; ++i) impl_->threads.emplace_back([this] { impl_->ioc.run(); });
  impl_->ioc.run();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

void HttpServer::shutdown() {
  impl_->ctx.draining = true;
  net::post(impl_->ioc, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
  });
  auto wait_live = [this](int seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (impl_->ctx.live_generations > 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  };
  wait_live(impl_->ctx.options.shutdown_grace_s);
  if (impl_->ctx.live_generations > 0) {
    spdlog::info("grace period over: aborting {} live generation(s)", impl_->ctx.live_generations.load());
    impl_->ctx.engine->abort_all();
    wait_live(5);  // their final chunks reach the clients
  }
  stop();
}

void HttpServer::stop() {
  net::post(impl_->ioc, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
  });
  impl_->ioc.stop();
}

}  // namespace parley::http
