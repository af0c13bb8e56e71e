#include "actors/output_service.hpp"

#include <spdlog/spdlog.h>

namespace parley {

OutputService::OutputService(const Tokenizer& tokenizer, std::string model_name)
    : processor_(tokenizer), metrics_(std::move(model_name)) {}

void OutputService::register_requests(const std::vector<Request>& requests, const std::shared_ptr<RequestSink>& sink,
                                      double now) {
  for (const Request& r : requests) {
    metrics_.on_request(r.sampling_params);
    SamplingParams child = r.sampling_params;
    child.n = 1;
    // An n-sample request's outputs come under its children's ids: each is a choice of its own here.
    for (const std::string& id : r.child_req_ids.empty() ? std::vector<std::string>{r.request_id} : r.child_req_ids) {
      processor_.add_request(id, r.prompt_token_ids, child);
      live_[id] =
          Live{sink, r.arrival_time > 0 ? r.arrival_time : now, -1, 0, r.num_prompt_tokens(), id == r.request_id};
    }
  }
}

void OutputService::deliver(const RequestOutput& out, double now) {
  auto it = live_.find(out.req_id);
  if (it == live_.end()) return;
  Live& l = it->second;
  if (!out.token_ids.empty()) {
    metrics_.on_generated_tokens(int(out.token_ids.size()));
    if (l.first_token < 0) {
      metrics_.on_first_token(now - l.arrival, l.counts_prompt ? l.num_prompt_tokens : 0);
      l.first_token = now;
    } else {
      metrics_.on_token(now - l.last_token);
    }
    l.last_token = now;
  }
  if (!out.embedding.empty()) metrics_.on_pooled(l.num_prompt_tokens);
  l.sink->on_output(out);
  if (out.finished()) {
    metrics_.on_finished(out.finish_reason, now - l.arrival);
    spdlog::info("request {} finished: {}, {} prompt + {} output tokens ({} cached), {:.3f} s", out.req_id,
                 finish_reason_name(out.finish_reason), l.num_prompt_tokens, out.num_output_tokens,
                 out.num_cached_tokens, now - l.arrival);
    live_.erase(it);
  }
}

std::vector<std::string> OutputService::on_outputs(const std::vector<EngineCoreOutput>& outputs, double now) {
  if (profile_) profile_->received(StepProfile::Hop::ToOutput, ++outputs_received_, StepPhase::HopToOutput);
  PhaseTimer timer(profile_, StepPhase::OutputProcessing);
  OutputProcessor::Processed processed = processor_.process_outputs(outputs);
  for (const RequestOutput& out : processed.outputs) deliver(out, now);
  return std::move(processed.reqs_to_abort);
}

void OutputService::on_aborted(const std::vector<std::string>& req_ids, double now, const std::string& error) {
  for (const auto& id : req_ids)
    if (auto out = processor_.abort_request(id)) {
      out->error = error;
      deliver(*out, now);
    }
}

void OutputService::on_kv_transfers(int64_t blocks, int64_t bytes, int64_t failures, int64_t auth_failures,
                                    const std::vector<double>& latencies) {
  metrics_.set_kv_transfers(blocks, bytes, failures);
  metrics_.set_kv_peer_auth_failures(auth_failures);
  for (double s : latencies) metrics_.on_kv_transfer_latency(s);
}

void OutputService::on_stats(const SchedulerStats& s) {
  metrics_.set_num_requests_running(s.num_running);
  metrics_.set_num_requests_waiting(s.num_waiting);
  metrics_.set_kv_cache_usage(s.kv_cache_usage);
  metrics_.set_prefix_cache_totals(s.prefix_cache_queries, s.prefix_cache_hits);
  metrics_.set_num_preemptions(s.num_preemptions);
  metrics_.set_prefill_tokens_computed(s.prefill_tokens_computed);
  metrics_.set_parallel_sampling_splits(s.num_splits);
  metrics_.set_engine_steps(s.num_steps, s.num_discarded_tokens, s.num_step_failures);
  metrics_.set_device_steps(s.num_graph_replays, s.num_eager_steps);
  metrics_.set_spec_decode(s.spec_num_drafts, s.spec_num_draft_tokens, s.spec_num_accepted_tokens,
                           s.spec_num_accepted_per_pos, s.num_decode_steps, s.num_uniform_decode_steps);
}

std::string OutputService::render_metrics() {
  metrics_.refresh_structured_output_totals();
  return metrics_.render();
}

}  // namespace parley
