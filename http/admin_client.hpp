// The HTTP client of `parley admin`: one snapshot of the server's /admin/events feed, and the /admin actions,
// with the bearer token. Synchronous (Beast), with a deadline on every call.
#pragma once
#include <chrono>
#include <string>

namespace parley::http {

struct AdminReply {
  int status = 0;    // 0: no answer (error says why)
  std::string body;  // a snapshot's JSON, or an action's answer
  std::string error;
};

class AdminClient {
 public:
  // url: http://HOST:PORT (a trailing slash is fine). Throws std::invalid_argument for another form.
  AdminClient(const std::string& url, std::string token);
  // The first event of /admin/events that carries the engine's answers.
  AdminReply snapshot(std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) const;
  AdminReply call(const std::string& method, const std::string& path, const std::string& body = "",
                  std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) const;

 private:
  std::string host_, port_, token_;
};

}  // namespace parley::http
