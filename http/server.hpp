// The HTTP/websocket front end on Boost.Beast. No Beast in this header: the server's TUs are the only
// ones that pay for it.
#pragma once
#include <memory>
#include <string>

#include "engine/engine_client.hpp"
#include "http/router.hpp"

namespace parley::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port (port() tells which)
  RouterConfig router;
  size_t max_body_bytes = 1 << 20;  // larger bodies get 413
  int read_timeout_s = 30;          // a request must arrive whole within this
  int write_timeout_s = 30;         // a response write (HTTP, SSE, websocket) must end within this, else the cut
  int idle_timeout_s = 60;          // a keep-alive connection with no request is closed
  int max_connections = 1024;       // open HTTP + websocket connections; past it: 503 and close
  int max_ws_requests = 64;         // requests running at once on one websocket; past it: a 429 error message
  // Output a connection has queued behind the write in flight; past it, the cut (a slow reader's requests aborted).
  size_t max_output_backlog_bytes = 8 << 20;
  bool admin_show_prompts = false;  // the admin feed carries each live request's prompt text (off: never shown)
  int io_threads = 1;
  int shutdown_grace_s = 10;             // on SIGTERM, live requests get this long to finish, then abort
  std::string chat_template_file;        // --chat-template: a Jinja file served instead of the model's template
  std::string tool_call_parser;          // --tool-call-parser (vLLM's names); "": recognised from the chat template
  bool enable_auto_tool_choice = false;  // --enable-auto-tool-choice
  bool exclude_tools_when_tool_choice_none = false;  // --exclude-tools-when-tool-choice-none
  bool strict_request_fields = false;                // --strict-request-fields
  bool structured_outputs_in_reasoning = false;      // --structured-outputs-in-reasoning
  std::string reasoning_parser;                      // --reasoning-parser: "" none
  bool matryoshka = false;                           // --matryoshka: /v1/embeddings honours `dimensions`
  size_t responses_store_max = 1000;                 // --responses-store-max: the newest /v1/responses kept
};

class HttpServer {
 public:
  HttpServer(EngineClient& engine, ServerOptions options);
  ~HttpServer();
  // Binds and listens (throws std::runtime_error if it cannot).
  void start();
  int port() const;
  // Serves until stop() (from another thread or a signal handler's thread).
  void run();
  // New connections refused and new generations on open ones answered 503, at once; does not wait.
  void stop_accepting();
  // Graceful: stops accepting, lets live generations finish within the grace period, aborts the rest
  // (their clients get a final `abort` chunk), then stops. Blocks; call from another thread than run().
  void shutdown();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace parley::http
