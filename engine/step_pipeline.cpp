#include "engine/step_pipeline.hpp"

#include <random>
#include <utility>

namespace parley {

namespace {

StepPipeline::Entropy default_entropy() {
  auto device = std::make_shared<std::random_device>();
  return [device] { return uint64_t((*device)()) << 32 | (*device)(); };
}

}  // namespace

StepPipeline::StepPipeline(SchedulerConfig config, bool async_scheduling, Entropy entropy)
    : scheduler_(std::move(config)),
      max_in_flight_(async_scheduling ? 2 : 1),
      entropy_(entropy ? std::move(entropy) : default_entropy()) {}

std::optional<StepPipeline::Refusal> StepPipeline::admit(std::vector<Request>& requests, double now,
                                                         KvTransfer kv_transfer) {
  const int limit = scheduler_.config().max_waiting;
  int seqs = 0;  // prompts x n, as the waiting bound counts them
  for (Request& r : requests) {
    const auto& given = r.sampling_params.seed;
    r.seed = given ? *given : entropy_();
    r.child_seeds.clear();
    for (size_t i = 0; i < r.child_req_ids.size(); ++i)
      r.child_seeds.push_back(i == 0 ? r.seed : given ? *given + i : entropy_());
    r.arrival_time = now;
    if (kv_transfer != KvTransfer::None) r.kv_transfer = kv_transfer;
    seqs += Scheduler::rows_of(r);
  }
  if (seqs > limit)
    return Refusal{400, "The request has " + std::to_string(seqs) +
                            " sequences (prompts x n); the server queues at most " + std::to_string(limit) +
                            " (--max-waiting)."};
  try {  // a request that can never run is a 400 even when the queue is full
    for (const Request& r : requests) scheduler_.check_request(r);
  } catch (const std::exception& e) {
    return Refusal{400, e.what()};
  }
  if (scheduler_.num_waiting_sequences() + seqs > limit)
    return Refusal{503, "The server is overloaded: the waiting queue is full (" + std::to_string(limit) +
                            " sequences). Retry later."};
  std::vector<std::string> added;
  try {
    for (Request& r : requests) {
      scheduler_.add_request(r);
      added.push_back(r.request_id);
      added.insert(added.end(), r.child_req_ids.begin(),
                   r.child_req_ids.end());  // queued separately with the split off
    }
  } catch (const std::exception& e) {  // ids repeated within the submission (the bound was checked above)
    scheduler_.finish_requests(added, RequestStatus::FinishedAborted);
    return Refusal{400, e.what()};
  }
  return std::nullopt;
}

StepPipeline::Plan StepPipeline::next_step() {
  if (pending_stop_checks_ > 0 || in_flight_.size() >= max_in_flight_) return nullptr;
  if (!scheduler_.has_unfinished_requests() && !scheduler_.has_pending_finished()) return nullptr;
  auto plan = std::make_shared<const SchedulerOutput>(scheduler_.schedule());
  if (!plan->has_work()) return nullptr;
  in_flight_.push_back(plan);
  return plan;
}

StepPipeline::Folded StepPipeline::fold(const ModelRunnerOutput& output) {
  if (in_flight_.empty()) throw std::logic_error("a step output arrived with no step in flight");
  const Plan plan = std::move(in_flight_.front());
  in_flight_.pop_front();
  Folded folded;
  if (plan->step_id <= resynced_through_) {
    // Planned before a resync: owed to no one, and its failure (likely, on a batch in disarray) is no news.
  } else if (output.failure) {
    folded = resync(*plan, *output.failure);
  } else {
    try {
      folded.outputs = scheduler_.update_from_output(*plan, output);
    } catch (const std::exception& e) {  // another step's output, or one that does not fit its plan
      folded = resync(*plan, StepFailure{e.what(), ""});
    }
  }
  if (in_flight_.empty() && std::exchange(lost_step_, false)) scheduler_.forget_stale_outputs();
  return folded;
}

StepPipeline::Folded StepPipeline::fail(const std::string& why) {
  if (in_flight_.empty()) throw std::logic_error("a step failed with no step in flight");
  ModelRunnerOutput lost;
  lost.step_id = in_flight_.front()->step_id;
  lost.failure = StepFailure{why, ""};
  return fold(lost);
}

// A lost step is not retried as it was: its requests are recomputed on a fresh batch (Scheduler::resync), the
// one at fault (if any) fails. The outputs their placeholders were owed are forgotten once no step is in flight.
StepPipeline::Folded StepPipeline::resync(const SchedulerOutput& plan, const StepFailure& failure) {
  lost_step_ = true;
  resynced_through_ = in_flight_.empty() ? plan.step_id : in_flight_.back()->step_id;
  Folded folded;
  folded.error = failure.what;
  folded.outputs = scheduler_.resync(failure.req_id, failure.what);
  return folded;
}

bool StepPipeline::may_stop(const std::vector<EngineCoreOutput>& outputs) const {
  if (!scheduler_.any_stop_strings()) return false;  // no lookup per output in the usual case
  for (const EngineCoreOutput& o : outputs)
    if (const Request* r = scheduler_.find(o.req_id); r && !r->sampling_params.stop.empty()) return true;
  return false;
}

std::vector<std::string> StepPipeline::live_request_ids() const {
  std::vector<std::string> ids;
  for (const Request* r : scheduler_.requests()) ids.push_back(r->request_id);
  return ids;
}

std::vector<uint64_t> StepPipeline::steps_in_flight() const {
  std::vector<uint64_t> ids;
  for (const Plan& p : in_flight_) ids.push_back(p->step_id);
  return ids;
}

}  // namespace parley
