// The engine loop in one thread (nano-vllm's shape): each step is schedule -> run -> update. The scheduler
// half is StepPipeline, which the scheduler actor drives too (with the worker actor as the runner); this
// class runs its plans on a ModelRunner in the same thread, for offline generation, tests and benchmarks.
// With async scheduling step N+1 is planned (and run) before step N is folded back, as with the actors.
#pragma once
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_parts.hpp"
#include "engine/step_pipeline.hpp"

namespace parley {

class EngineCore {
 public:
  // config.num_kv_blocks sizes both the scheduler's pool and the runner's cache; the speculative config and
  // vocab as make_engine_parts takes them.
  EngineCore(LlamaModel& model, SchedulerConfig config, bool async_scheduling = false,
             const std::optional<SpeculativeConfig>& speculative = std::nullopt, const Vocab* vocab = nullptr);
  // The same over any device's model (its block count must equal config.num_kv_blocks).
  EngineCore(std::unique_ptr<DeviceModel> device, SchedulerConfig config, bool async_scheduling = false,
             const std::optional<SpeculativeConfig>& speculative = std::nullopt, const Vocab* vocab = nullptr);
  // Over parts make_engine_parts built.
  EngineCore(EngineParts parts, bool async_scheduling);

  // Queued as given (its seed included); StepPipeline::admit is the server's admission.
  void add_request(Request request) { pipeline_.scheduler().add_request(std::move(request)); }
  std::vector<std::string> abort_requests(const std::vector<std::string>& ids) {
    return pipeline_.finish(ids, RequestStatus::FinishedAborted);
  }
  // One step folded back; empty when there was nothing to run. A lost step is resynchronised: the requests
  // it failed come back finished (Abort) with their error, the rest are recomputed.
  std::vector<EngineCoreOutput> step();
  // Requests still live, or a step whose output is not folded back yet.
  bool has_unfinished_requests() const {
    return pipeline_.scheduler().has_unfinished_requests() || pipeline_.has_steps_in_flight();
  }

  Scheduler& scheduler() { return pipeline_.scheduler(); }
  const Scheduler& scheduler() const { return pipeline_.scheduler(); }
  StepPipeline& pipeline() { return pipeline_; }
  ModelRunner& runner() { return *runner_; }

 private:
  StepPipeline pipeline_;
  std::unique_ptr<ModelRunner> runner_;
  std::deque<ModelRunnerOutput> ran_;  // outputs of the steps in flight, oldest first
};

}  // namespace parley
