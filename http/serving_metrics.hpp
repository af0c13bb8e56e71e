// The server's /metrics: vLLM's metric names (vllm/v1/metrics/loggers.py) under the `parley:` prefix,
// each labelled model_name, plus Parley's own counters. Owned by one actor.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/request_output.hpp"
#include "engine/sampling_params.hpp"
#include "http/prometheus.hpp"

namespace parley {

class ServingMetrics {
 public:
  explicit ServingMetrics(std::string model_name);

  // The scheduler's snapshot after a step. Counter setters take its cumulative totals.
  void set_num_requests_running(int n);
  void set_num_requests_waiting(int n);
  void set_kv_cache_usage(double fraction);  // 0..1, as vLLM's kv_cache_usage_perc
  void set_prefix_cache_totals(int64_t queried_tokens, int64_t hit_tokens);
  void set_num_preemptions(int64_t total);
  void set_prefill_tokens_computed(int64_t total);
  void set_parallel_sampling_splits(int64_t total);
  void set_engine_steps(int64_t steps, int64_t discarded_tokens, int64_t step_failures);
  void set_device_steps(int64_t graph_replays, int64_t eager_steps);
  // Speculative decoding totals (vLLM's spec_decode_* counters) and uniform decode steps.
  void set_spec_decode(int64_t num_drafts, int64_t num_draft_tokens, int64_t num_accepted_tokens,
                       const std::vector<int64_t>& accepted_per_pos, int64_t decode_steps,
                       int64_t uniform_decode_steps);
  // PD disaggregation: cumulative transfer totals, and each transfer's latency (routing to arrival).
  void set_kv_transfers(int64_t blocks, int64_t bytes, int64_t failures);
  void on_kv_transfer_latency(double seconds);
  void set_kv_peer_auth_failures(int64_t total);
  void on_request(const SamplingParams& params);  // once per request the user sent: n, structured outputs
  // Mirrors the structured-output masks' process-wide totals (engine/structured_output/compiled_grammar.hpp).
  void refresh_structured_output_totals();

  // Per request, as its outputs reach the client.
  // Counted as they happen, as vLLM does: a request's prompt with its first token, generated tokens per delta.
  void on_first_token(double seconds_since_arrival, int prompt_tokens);
  void on_token(double seconds_since_previous_token);
  void on_generated_tokens(int n);
  // A pooling request's vector reached the client: its prompt tokens counted, and the request as a pooling one.
  void on_pooled(int prompt_tokens);
  // Throws std::invalid_argument for FinishReason::None.
  void on_finished(FinishReason reason, double e2e_seconds);

  std::string render() const { return registry_.render(); }
  const prom::Registry& registry() const { return registry_; }

 private:
  std::string model_name_;
  prom::Registry registry_;
  prom::Gauge *running_, *waiting_, *kv_usage_;
  prom::Counter *prefix_queries_, *prefix_hits_, *preemptions_, *prompt_tokens_, *generation_tokens_,
      *pooling_requests_, *pooling_tokens_;
  prom::Counter *prefill_computed_, *splits_, *steps_, *discarded_, *step_failures_, *graph_replays_, *eager_steps_;
  prom::Counter *spec_drafts_, *spec_draft_tokens_, *spec_accepted_, *decode_steps_, *uniform_decode_steps_;
  prom::Family<prom::Counter>* spec_accepted_per_pos_;
  prom::Gauge* spec_mean_acceptance_;
  prom::Histogram* params_n_;
  prom::Family<prom::Counter>* structured_requests_;
  prom::Counter *masks_applied_, *mask_seconds_, *masks_computed_, *masks_prefetched_;
  prom::Family<prom::Counter>* request_success_;
  prom::Histogram *ttft_, *itl_, *e2e_;
  prom::Counter *kv_blocks_, *kv_bytes_, *kv_failures_, *kv_auth_failures_;
  prom::Histogram* kv_latency_;
};

}  // namespace parley
