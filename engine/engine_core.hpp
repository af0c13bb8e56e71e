// The engine loop in one thread (nano-vllm's shape): each step is schedule -> run -> update. The actors
// run the same three calls as messages; this class serves offline generation, tests and benchmarks.
// With async scheduling it keeps one step "in flight" and plans the next before folding it back, in the
// order the actors do (schedule N+1, update N, run N+1), so tests can compare both without threads.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/model_runner.hpp"
#include "engine/scheduler.hpp"
#include "engine/speculative_config.hpp"

namespace parley {

// The scheduler's side of a speculative config: k drafts per decode request, padding, the proposer's lookahead.
SchedulerConfig with_speculation(SchedulerConfig config, const std::optional<SpeculativeConfig>& speculative);

class EngineCore {
 public:
  // config.num_kv_blocks sizes both the scheduler's pool and the runner's cache. With a speculative config
  // the scheduler gives decode requests its k drafts and the runner proposes and verifies them; vocab is
  // what a draft model's vocabulary must equal (nullptr: only the sizes are compared).
  EngineCore(LlamaModel& model, SchedulerConfig config, bool async_scheduling = false,
             const std::optional<SpeculativeConfig>& speculative = std::nullopt, const Vocab* vocab = nullptr);
  // The same over any device's model (its block count must equal config.num_kv_blocks).
  EngineCore(std::unique_ptr<DeviceModel> device, SchedulerConfig config, bool async_scheduling = false,
             const std::optional<SpeculativeConfig>& speculative = std::nullopt, const Vocab* vocab = nullptr);

  void add_request(Request request) { scheduler_.add_request(std::move(request)); }
  std::vector<std::string> abort_requests(const std::vector<std::string>& ids) {
    return scheduler_.finish_requests(ids, RequestStatus::FinishedAborted);
  }
  // One step; empty when there was nothing to run.
  std::vector<EngineCoreOutput> step();
  // Requests still live, or a step whose output is not folded back yet.
  bool has_unfinished_requests() const { return scheduler_.has_unfinished_requests() || in_flight_.has_value(); }

  Scheduler& scheduler() { return scheduler_; }
  const Scheduler& scheduler() const { return scheduler_; }
  ModelRunner& runner() { return runner_; }

 private:
  struct StepInFlight {
    SchedulerOutput scheduler_output;
    ModelRunnerOutput model_runner_output;
  };
  std::optional<StepInFlight> run_next();  // schedules and runs a step, if there is anything to send

  Scheduler scheduler_;
  ModelRunner runner_;
  bool async_scheduling_;
  std::optional<StepInFlight> in_flight_;
};

}  // namespace parley
