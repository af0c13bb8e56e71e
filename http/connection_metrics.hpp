// The HTTP server's own counters, appended to the engine's /metrics text: connections accepted and
// open, malformed or refused requests by the status they were answered with, and connections cut because
// their client did not read. Shared by the io threads, so one mutex around the registry.
#pragma once
#include <mutex>
#include <string>

#include "http/prometheus.hpp"

namespace parley::http {

class ConnectionMetrics {
 public:
  ConnectionMetrics()
      : accepted_(registry_.counter("parley:http_connections_total", "HTTP connections accepted.").get()),
        open_(registry_.gauge("parley:http_connections_open", "HTTP and websocket connections open now.").get()),
        refused_(registry_.counter("parley:http_refused_requests_total",
                                   "Requests answered with an error before routing (malformed, too large, timed "
                                   "out, past the pipelining limit), by status.",
                                   {"status"})),
        cut_(registry_.counter("parley:http_connections_cut_total",
                               "HTTP and websocket connections cut because the client did not read its output: a "
                               "write past --write-timeout, or output past --max-output-backlog-bytes; their "
                               "requests are aborted.",
                               {"reason"})),
        ignored_fields_(registry_
                            .counter("parley:request_fields_ignored_total",
                                     "Request fields neither OpenAI's API nor Parley knows, accepted and "
                                     "ignored (--strict-request-fields answers 400 instead).")
                            .get()) {
    for (const char* reason : {kWriteTimeout, kOutputBacklog}) cut_.labels({reason});  // both shown from the start
  }

  static constexpr const char* kWriteTimeout = "write_timeout";
  static constexpr const char* kOutputBacklog = "output_backlog";

  // Returns the number of connections open, this one included.
  int on_accepted() {
    std::lock_guard lock(mutex_);
    accepted_.inc(), open_.inc();
    return int(open_.value());
  }
  void on_closed() {
    std::lock_guard lock(mutex_);
    open_.dec();
  }
  void on_refused(int status) {
    std::lock_guard lock(mutex_);
    refused_.labels({std::to_string(status)}).inc();
  }
  void on_cut(const char* reason) {
    std::lock_guard lock(mutex_);
    cut_.labels({reason}).inc();
  }
  void on_ignored_fields(size_t count) {
    std::lock_guard lock(mutex_);
    ignored_fields_.inc(double(count));
  }
  std::string render() const {
    std::lock_guard lock(mutex_);
    return registry_.render();
  }

 private:
  mutable std::mutex mutex_;
  prom::Registry registry_;
  prom::Counter& accepted_;
  prom::Gauge& open_;
  prom::Family<prom::Counter>& refused_;
  prom::Family<prom::Counter>& cut_;
  prom::Counter& ignored_fields_;
};

}  // namespace parley::http
