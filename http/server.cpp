// The listener: accepts connections (each an HttpSession, http/http_session.cpp), runs the io threads, and
// shuts down gracefully.
#include <spdlog/spdlog.h>

#include <thread>

#include "http/chat_prompt.hpp"
#include "http/session_common.hpp"

namespace parley::http {

std::string new_request_id(ServerContext& ctx, const char* prefix) {
  static const uint64_t boot = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%08llx%06llx", prefix, (unsigned long long)(boot & 0xffffffffu),
                (unsigned long long)ctx.next_id.fetch_add(1));
  return buf;
}

namespace {

// --reasoning-parser: a named one, auto (the chat template's format, logged), or none ("").
std::optional<ReasoningParser> served_reasoning_parser(const std::string& name, const ChatTemplate* chat_template) {
  if (name.empty()) return std::nullopt;
  if (name != "auto") return parse_reasoning_parser(name);
  // Rendered as a thinking request: some templates close the thinking at once unless enable_thinking is set.
  const nlohmann::ordered_json thinking = {{"enable_thinking", true}};
  const auto detected =
      chat_template ? detect_reasoning_parser(chat_template->source(), generation_prompt(*chat_template, thinking))
                    : std::nullopt;
  if (detected)
    spdlog::info("reasoning: split with the {} parser (the chat template's format)", reasoning_parser_name(*detected));
  else
    spdlog::info("reasoning: the chat template shows no thinking format; the output stays whole in content");
  return detected;
}

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
        start_http_session(ctx, std::move(socket));
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
  impl_->ctx.serving.parameters = engine.model_config().parameter_count(false);
  impl_->ctx.serving.active_parameters = engine.model_config().parameter_count(true);
  impl_->ctx.serving.n_experts = engine.model_config().moe.n_experts;
  impl_->ctx.serving.n_experts_used = engine.model_config().moe.n_used;
  impl_->ctx.serving.chat_template =
      served_chat_template(engine.chat_template(), impl_->ctx.options.chat_template_file, engine.tokenizer());
  impl_->ctx.serving.reasoning_parser =
      served_reasoning_parser(impl_->ctx.options.reasoning_parser, impl_->ctx.serving.chat_template.get());
  impl_->ctx.serving.max_n = engine.max_n();
  impl_->ctx.serving.pooling = engine.model_config().pooling;
  impl_->ctx.serving.matryoshka = impl_->ctx.options.matryoshka;
  impl_->ctx.serving.embedding_dim = engine.model_config().dim;
  impl_->ctx.serving.strict_request_fields = impl_->ctx.options.strict_request_fields;
  impl_->ctx.serving.structured_outputs_in_reasoning = impl_->ctx.options.structured_outputs_in_reasoning;
  impl_->ctx.responses.set_max_responses(impl_->ctx.options.responses_store_max);
  ToolServing& tools = impl_->ctx.serving.tools;
  const ServerOptions& o = impl_->ctx.options;
  if (!o.tool_call_parser.empty()) tools.parser = parse_tool_call_parser(o.tool_call_parser);
  tools.enable_auto_tool_choice = o.enable_auto_tool_choice;
  tools.exclude_tools_when_tool_choice_none = o.exclude_tools_when_tool_choice_none;
  const auto& served = impl_->ctx.serving.chat_template;
  const auto detected = served ? detect_tool_call_parser(served->source()) : std::nullopt;
  if (tools.parser)
    spdlog::info("tool calls: read with the {} parser (--tool-call-parser)", tool_call_parser_name(*tools.parser));
  else if (detected)
    spdlog::info("tool calls: read with the {} parser (the chat template's format)", tool_call_parser_name(*detected));
  else
    spdlog::info("tool calls: the chat template shows no format Parley reads; --tool-call-parser names one");
  // Harmony's calls reach the openai parser through the Harmony reading of the output.
  auto& reasoning = impl_->ctx.serving.reasoning_parser;
  const std::optional<ToolCallParser> reads_calls = tools.parser ? tools.parser : detected;
  if (!reasoning && reads_calls == ToolCallParser::OpenAi) {
    reasoning = ReasoningParser::GptOss;
    spdlog::info(
        "reasoning: split with the openai_gptoss parser (the openai tool-call parser reads Harmony through it)");
  }
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
  if (ec)
    throw std::runtime_error("cannot bind " + impl_->ctx.options.host + ":" + std::to_string(impl_->ctx.options.port) +
                             ": " + ec.message());
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

void HttpServer::stop_accepting() {
  impl_->ctx.draining = true;
  net::post(impl_->ioc, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
  });
}

void HttpServer::shutdown() {
  stop_accepting();
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
