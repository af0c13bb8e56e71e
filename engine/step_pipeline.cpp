#include "engine/step_pipeline.hpp"

#include <random>

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
  if (scheduler_.num_waiting() + int(requests.size()) > scheduler_.config().max_waiting)
    return Refusal{503, "The server is overloaded: the waiting queue is full (" +
                            std::to_string(scheduler_.config().max_waiting) + " requests). Retry later."};
  std::vector<std::string> added;
  try {
    for (Request& r : requests) {
      const auto& given = r.sampling_params.seed;
      r.seed = given ? *given : entropy_();
      r.child_seeds.clear();
      for (size_t i = 0; i < r.child_req_ids.size(); ++i)
        r.child_seeds.push_back(i == 0 ? r.seed : given ? *given + i : entropy_());
      r.arrival_time = now;
      if (kv_transfer != KvTransfer::None) r.kv_transfer = kv_transfer;
      scheduler_.add_request(r);
      added.push_back(r.request_id);
      added.insert(added.end(), r.child_req_ids.begin(),
                   r.child_req_ids.end());  // queued separately with the split off
    }
  } catch (const std::exception& e) {
    scheduler_.finish_requests(added, RequestStatus::FinishedAborted);
    return Refusal{dynamic_cast<const Scheduler::QueueFull*>(&e) ? 503 : 400, e.what()};
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
  try {
    folded.outputs = scheduler_.update_from_output(*plan, output);
  } catch (const std::exception& e) {
    return abort_all(e.what());  // folded back only in part, or another step's output: nothing planned can be trusted
  }
  if (lost_step_ && in_flight_.empty()) {
    scheduler_.forget_stale_outputs();
    lost_step_ = false;
  }
  return folded;
}

StepPipeline::Folded StepPipeline::fail(const std::string& why) {
  if (!in_flight_.empty()) in_flight_.pop_front();
  return abort_all(why);
}

// A lost step cannot be retried safely: every live request ends, so nothing is stuck or leaked. The outputs
// its placeholders were owed are forgotten once no step is in flight.
StepPipeline::Folded StepPipeline::abort_all(std::string why) {
  lost_step_ = true;
  Folded folded;
  folded.aborted = scheduler_.finish_requests(live_request_ids(), RequestStatus::FinishedAborted);
  folded.error = std::move(why);
  if (in_flight_.empty()) {
    scheduler_.forget_stale_outputs();
    lost_step_ = false;
  }
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
