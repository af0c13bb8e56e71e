// The scheduler's half of the engine loop, shared by the one-thread EngineCore and the scheduler actor:
// admission (seeds, the queue bound), the queue of steps sent to the runner (one, or two with async
// scheduling: step N+1 is planned while N runs), folding outputs back in step order, the stop-string gate,
// and recovery from a lost step. Whoever runs the plans (a ModelRunner in this thread, the worker actor)
// calls next_step() until it returns nothing, runs each plan in order, and hands each output to fold().
#pragma once
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/scheduler.hpp"

namespace parley {

class StepPipeline {
 public:
  using Plan = std::shared_ptr<const SchedulerOutput>;  // shared: the runner reads it while it stays queued here
  // Where unseeded requests' seeds come from (a std::random_device by default).
  using Entropy = std::function<uint64_t()>;

  StepPipeline(SchedulerConfig config, bool async_scheduling, Entropy entropy = {});

  // A submission refused as a whole, with the HTTP status it maps to (503: the queue is full; 400: a bad request).
  struct Refusal {
    int status;
    std::string message;
  };
  // Queues a submission all or nothing: an unseeded request (and each split child) draws a seed, child i of a
  // seeded n-sample request gets seed + i; every request gets arrival_time `now` and the `kv_transfer` given.
  std::optional<Refusal> admit(std::vector<Request>& requests, double now, KvTransfer kv_transfer = KvTransfer::None);

  // The next step to run, or nothing: the queue is full, a stop check is pending, or there is no work.
  Plan next_step();

  // The oldest step's output, folded back. A lost step (the runner failed: output.failure or fail(); or the
  // output does not fit its plan) resynchronises the engine (Scheduler::resync): the requests it fails end
  // with outputs that carry the error (a lost step's only outputs); the others are recomputed.
  struct Folded {
    std::vector<EngineCoreOutput> outputs;
    std::string error;  // empty unless the step was lost
  };
  Folded fold(const ModelRunnerOutput& output);
  Folded fail(const std::string& why);  // the runner gave no output for the oldest step in flight

  // The stop-string gate: while outputs of requests with stop strings are being checked (by the output
  // processor, maybe on another actor), no step is planned, so at most the step already queued is wasted.
  bool may_stop(const std::vector<EngineCoreOutput>& outputs) const;
  void stop_check_sent() { ++pending_stop_checks_; }
  void stop_check_done() { --pending_stop_checks_; }

  std::vector<std::string> finish(const std::vector<std::string>& ids, RequestStatus status) {
    return scheduler_.finish_requests(ids, status);
  }
  std::vector<std::string> live_request_ids() const;

  Scheduler& scheduler() { return scheduler_; }
  const Scheduler& scheduler() const { return scheduler_; }
  bool async_scheduling() const { return max_in_flight_ > 1; }
  std::vector<uint64_t> steps_in_flight() const;  // step ids queued on the runner, oldest first
  bool has_steps_in_flight() const { return !in_flight_.empty(); }

 private:
  Folded resync(const SchedulerOutput& plan, const StepFailure& failure);

  Scheduler scheduler_;
  size_t max_in_flight_;
  std::deque<Plan> in_flight_;
  int pending_stop_checks_ = 0;
  bool lost_step_ = false;         // a step failed: its placeholders' outputs will never come
  uint64_t resynced_through_ = 0;  // the last step planned before the latest resync
  Entropy entropy_;
};

}  // namespace parley
