// Names, help texts and bucket bounds follow vLLM's PrometheusStatLogger so its dashboards carry over
// with `vllm:` replaced by `parley:`.
#include "http/serving_metrics.hpp"

#include <stdexcept>

#include "engine/structured_output/compiled_grammar.hpp"

namespace parley {

namespace {

const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                                          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kRequestLatencyBuckets = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                                    5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                                    60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

}  // namespace

ServingMetrics::ServingMetrics(std::string model_name) : model_name_(std::move(model_name)) {
  const std::vector<std::string> by_model = {"model_name"};
  const std::vector<std::string> model = {model_name_};
  auto gauge = [&](const char* name, const char* help) { return &registry_.gauge(name, help, by_model).labels(model); };
  auto counter = [&](const char* name, const char* help) {
    return &registry_.counter(name, help, by_model).labels(model);
  };
  auto histogram = [&](const char* name, const char* help, const std::vector<double>& buckets) {
    return &registry_.histogram(name, help, buckets, by_model).labels(model);
  };

  running_ = gauge("parley:num_requests_running", "Number of requests in model execution batches.");
  waiting_ = gauge("parley:num_requests_waiting", "Number of requests waiting to be processed.");
  kv_usage_ = gauge("parley:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.");
  prefix_queries_ =
      counter("parley:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.");
  prefix_hits_ = counter("parley:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.");
  preemptions_ = counter("parley:num_preemptions_total", "Cumulative number of preemption from the engine.");
  prompt_tokens_ = counter("parley:prompt_tokens_total", "Number of prefill tokens processed.");
  generation_tokens_ = counter("parley:generation_tokens_total", "Number of generation tokens processed.");
  pooling_requests_ =
      counter("parley:pooling_requests_total", "Number of pooling requests (embeddings) that produced their vector.");
  pooling_tokens_ = counter("parley:pooling_prompt_tokens_total", "Number of prompt tokens of those pooling requests.");
  request_success_ = &registry_.counter("parley:request_success_total", "Count of successfully processed requests.",
                                        {"model_name", "finished_reason"});
  for (FinishReason r : {FinishReason::Stop, FinishReason::Length, FinishReason::Abort})
    request_success_->labels({model_name_, finish_reason_name(r)});  // every reason shows 0 from the start
  ttft_ = histogram("parley:time_to_first_token_seconds", "Histogram of time to first token in seconds.", kTtftBuckets);
  itl_ = histogram("parley:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", kItlBuckets);
  e2e_ = histogram("parley:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
                   kRequestLatencyBuckets);
  params_n_ = histogram("parley:request_params_n", "Histogram of the n request parameter.", {1, 2, 5, 10, 20});
  structured_requests_ =
      &registry_.counter("parley:structured_output_requests_total",
                         "Requests with a structured output, by kind (json, json_object, regex, choice, grammar).",
                         {"model_name", "kind"});
  masks_applied_ =
      counter("parley:structured_output_masks_total", "Sampled positions masked by a structured output's grammar.");
  mask_seconds_ = counter("parley:structured_output_mask_seconds_total",
                          "Time spent computing and applying grammar masks; divided by the masks: the cost per token.");
  masks_computed_ = counter("parley:structured_output_mask_computations_total",
                            "Grammar masks computed by a vocabulary walk (the rest came from the per-state cache).");
  masks_prefetched_ = counter("parley:structured_output_mask_prefetches_total",
                              "Of those walks, the ones done on another thread while the forward pass ran.");
  // Parley's own: work the prefix cache did not save, delayed splits, steps, speculation, PD.
  splits_ = counter("parley:parallel_sampling_splits_total",
                    "Parallel-sampling requests split into their n children after one shared prefill.");
  steps_ = counter("parley:engine_steps_total", "Steps (forward passes) sent to the worker.");
  step_failures_ = counter("parley:engine_step_failures_total",
                           "Steps lost and resynchronised (their requests recomputed), and requests the engine "
                           "failed for their own fault.");
  graph_replays_ = counter("parley:cuda_graph_replays_total",
                           "Forward passes that replayed a captured CUDA graph (uniform decode batches).");
  eager_steps_ = counter("parley:eager_steps_total", "Forward passes run eagerly (every pass on the CPU).");
  discarded_ =
      counter("parley:discarded_tokens_total",
              "Tokens sampled in a step planned before their request finished or was preempted; never emitted.");
  spec_drafts_ = counter("parley:spec_decode_num_drafts_total",
                         "Verifications of proposed draft tokens (one per request per step).");
  spec_draft_tokens_ = counter("parley:spec_decode_num_draft_tokens_total",
                               "Draft tokens proposed and verified (placeholders excluded).");
  spec_accepted_ = counter("parley:spec_decode_num_accepted_tokens_total", "Draft tokens accepted.");
  spec_accepted_per_pos_ =
      &registry_.counter("parley:spec_decode_num_accepted_tokens_per_pos_total",
                         "Draft tokens accepted, by position in the draft.", {"model_name", "position"});
  spec_mean_acceptance_ = gauge("parley:spec_decode_mean_acceptance_length",
                                "Tokens per verification: 1 + accepted drafts / verifications (0 before any).");
  decode_steps_ = counter("parley:decode_steps_total", "Steps in which every scheduled request decodes.");
  uniform_decode_steps_ = counter("parley:uniform_decode_steps_total",
                                  "Decode steps in which every request has 1 + k query tokens (k drafts, padded).");
  prefill_computed_ = counter("parley:prefill_tokens_computed_total",
                              "Prompt tokens whose KV was computed (prefix-cache hits excluded).");
  kv_blocks_ =
      counter("parley:kv_blocks_transferred_total", "KV blocks sent (prefill role) or received (decode role).");
  kv_bytes_ = counter("parley:kv_transfer_bytes_total", "Bytes of KV transfers sent or received, headers included.");
  kv_failures_ = counter("parley:kv_transfer_failures_total",
                         "KV transfers that failed (refused, timed out, or their prefill instance went down).");
  kv_auth_failures_ = counter("parley:kv_peer_auth_failures_total",
                              "KV peers that failed --kv-secret authentication, and messages refused from peers.");
  kv_latency_ =
      histogram("parley:kv_transfer_latency_seconds",
                "Histogram of KV transfer latency, from routing the prompt to the KV's arrival.", kTtftBuckets);
}

void ServingMetrics::set_kv_transfers(int64_t blocks, int64_t bytes, int64_t failures) {
  kv_blocks_->set(double(blocks));
  kv_bytes_->set(double(bytes));
  kv_failures_->set(double(failures));
}
void ServingMetrics::on_kv_transfer_latency(double seconds) { kv_latency_->observe(seconds); }
void ServingMetrics::set_kv_peer_auth_failures(int64_t total) { kv_auth_failures_->set(double(total)); }

void ServingMetrics::set_num_requests_running(int n) { running_->set(n); }
void ServingMetrics::set_num_requests_waiting(int n) { waiting_->set(n); }
void ServingMetrics::set_kv_cache_usage(double fraction) { kv_usage_->set(fraction); }
void ServingMetrics::set_prefix_cache_totals(int64_t queried_tokens, int64_t hit_tokens) {
  prefix_queries_->set(double(queried_tokens));
  prefix_hits_->set(double(hit_tokens));
}
void ServingMetrics::set_num_preemptions(int64_t total) { preemptions_->set(double(total)); }
void ServingMetrics::set_prefill_tokens_computed(int64_t total) { prefill_computed_->set(double(total)); }
void ServingMetrics::set_parallel_sampling_splits(int64_t total) { splits_->set(double(total)); }
void ServingMetrics::set_engine_steps(int64_t steps, int64_t discarded_tokens, int64_t step_failures) {
  steps_->set(double(steps));
  step_failures_->set(double(step_failures));
  discarded_->set(double(discarded_tokens));
}
void ServingMetrics::set_device_steps(int64_t graph_replays, int64_t eager_steps) {
  graph_replays_->set(double(graph_replays));
  eager_steps_->set(double(eager_steps));
}
void ServingMetrics::set_spec_decode(int64_t num_drafts, int64_t num_draft_tokens, int64_t num_accepted_tokens,
                                     const std::vector<int64_t>& accepted_per_pos, int64_t decode_steps,
                                     int64_t uniform_decode_steps) {
  spec_drafts_->set(double(num_drafts));
  spec_draft_tokens_->set(double(num_draft_tokens));
  spec_accepted_->set(double(num_accepted_tokens));
  for (size_t i = 0; i < accepted_per_pos.size(); ++i)
    spec_accepted_per_pos_->labels({model_name_, std::to_string(i)}).set(double(accepted_per_pos[i]));
  spec_mean_acceptance_->set(num_drafts > 0 ? 1.0 + double(num_accepted_tokens) / double(num_drafts) : 0.0);
  decode_steps_->set(double(decode_steps));
  uniform_decode_steps_->set(double(uniform_decode_steps));
}

void ServingMetrics::on_request(const SamplingParams& params) {
  params_n_->observe(double(params.n));
  if (!params.structured_outputs) return;
  static constexpr const char* kKinds[] = {"json", "json_object", "regex", "choice", "grammar"};
  structured_requests_->labels({model_name_, kKinds[int(params.structured_outputs->kind)]}).inc();
}

void ServingMetrics::refresh_structured_output_totals() {
  const auto& stats = structured::structured_output_stats();
  masks_applied_->set(double(stats.masks_applied.load(std::memory_order_relaxed)));
  mask_seconds_->set(double(stats.mask_nanoseconds.load(std::memory_order_relaxed)) * 1e-9);
  masks_computed_->set(double(stats.masks_computed.load(std::memory_order_relaxed)));
  masks_prefetched_->set(double(stats.masks_prefetched.load(std::memory_order_relaxed)));
}

void ServingMetrics::on_first_token(double seconds_since_arrival, int prompt_tokens) {
  ttft_->observe(seconds_since_arrival);
  prompt_tokens_->inc(prompt_tokens);
}
void ServingMetrics::on_pooled(int prompt_tokens) {
  prompt_tokens_->inc(prompt_tokens);
  pooling_requests_->inc();
  pooling_tokens_->inc(prompt_tokens);
}
void ServingMetrics::on_generated_tokens(int n) { generation_tokens_->inc(n); }
void ServingMetrics::on_token(double seconds_since_previous_token) { itl_->observe(seconds_since_previous_token); }

void ServingMetrics::on_finished(FinishReason reason, double e2e_seconds) {
  if (reason == FinishReason::None) throw std::invalid_argument("on_finished needs a finish reason");
  request_success_->labels({model_name_, finish_reason_name(reason)}).inc();
  e2e_->observe(e2e_seconds);
}

}  // namespace parley
