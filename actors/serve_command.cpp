// `parley serve`: the engine's actors behind the HTTP/websocket front end, until SIGINT or SIGTERM.
#include <spdlog/spdlog.h>

#include <csignal>
#include <optional>
#include <thread>

#include "actors/commands.hpp"
#include "engine/thread_placement.hpp"
#include "http/server.hpp"

namespace parley {

int run_serve(const ServeOptions& o) {
  spdlog::set_level(spdlog::level::from_str(o.log_level));
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  // Signals are taken by one thread with sigwait, so no handler runs inside the engine's threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto engine = EngineClient::start(o.engine);
  std::optional<http::HttpServer> server_or_none;
  try {
    server_or_none.emplace(*engine, o.server);  // parses the chat template: a broken one stops here
  } catch (...) {
    engine->shutdown();
    throw;
  }
  http::HttpServer& server = *server_or_none;
  // The HTTP threads (this one, those server.run() starts, the signal thread) stay off the compute CPUs.
  if (!pin_this_thread(engine->service_cpus())) spdlog::warn("the HTTP threads could not be pinned to their CPUs");
  server.start();
  spdlog::info(
      "serving {} on http://{}:{} (OpenAI /v1/completions, /v1/chat/completions, /v1/responses; Anthropic "
      "/v1/messages; websocket "
      "/v1/ws)",
      engine->model_name(), o.server.host, server.port());
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    server.stop_accepting();  // first: once the line below is logged, a new generation gets 503
    spdlog::info("signal {}: no new connections; live requests have {} s to finish", sig, o.server.shutdown_grace_s);
    server.shutdown();
  });
  server.run();
  engine->shutdown();                                    // aborts live requests, stops every actor
  pthread_kill(signal_thread.native_handle(), SIGTERM);  // release sigwait if the server stopped by itself
  signal_thread.join();
  spdlog::info("stopped");
  return 0;
}

}  // namespace parley
