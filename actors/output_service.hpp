// The output actor's plain class: routes each request's deltas (from the OutputProcessor) to the sink of
// the client that sent it, and times and counts them for /metrics. No CAF: tests drive it directly.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/engine_client.hpp"
#include "engine/output_processor.hpp"
#include "engine/request.hpp"
#include "engine/scheduler.hpp"
#include "http/serving_metrics.hpp"

namespace parley {

class OutputService {
 public:
  OutputService(const Tokenizer& tokenizer, std::string model_name);

  // Requests admitted by the scheduler, before their first output.
  void register_requests(const std::vector<Request>& requests, const std::shared_ptr<RequestSink>& sink, double now);
  // One step's news; returns the ids a stop string ended (the scheduler must drop them).
  std::vector<std::string> on_outputs(const std::vector<EngineCoreOutput>& outputs, double now);
  // Requests the scheduler aborted: each live one gets its final `abort` output.
  // error: why the engine failed them ("" for a client's abort); it reaches the client as an error.
  void on_aborted(const std::vector<std::string>& req_ids, double now, const std::string& error = "");
  void on_stats(const SchedulerStats& stats);
  // PD roles: the KV transfer totals, and the latencies of transfers since the last report.
  void on_kv_transfers(int64_t blocks, int64_t bytes, int64_t failures, int64_t auth_failures,
                       const std::vector<double>& latencies);
  std::string render_metrics();
  // Times each step's outputs into `profile` (null: off); the caller keeps it alive.
  void set_profile(StepProfile* profile) { profile_ = profile; }
  int num_live() const { return int(live_.size()); }

 private:
  struct Live {
    std::shared_ptr<RequestSink> sink;
    double arrival = 0, first_token = -1, last_token = 0;
    int num_prompt_tokens = 0;
    bool counts_prompt = true;  // an n-sample request's prompt is counted once, with its first choice
  };
  void deliver(const RequestOutput& out, double now);

  OutputProcessor processor_;
  ServingMetrics metrics_;
  std::unordered_map<std::string, Live> live_;
  StepProfile* profile_ = nullptr;
  uint64_t outputs_received_ = 0;  // the scheduler numbers its outputs messages the same way
};

}  // namespace parley
