// The engine loop in one thread (nano-vllm's shape): each step is schedule -> run -> update. The actors
// run the same three calls as messages; this class serves offline generation, tests and benchmarks.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/model_runner.hpp"
#include "engine/scheduler.hpp"

namespace parley {

class EngineCore {
 public:
  // config.num_kv_blocks sizes both the scheduler's pool and the runner's cache.
  EngineCore(LlamaModel& model, SchedulerConfig config);

  void add_request(Request request) { scheduler_.add_request(std::move(request)); }
  std::vector<std::string> abort_requests(const std::vector<std::string>& ids) {
    return scheduler_.finish_requests(ids, RequestStatus::FinishedAborted);
  }
  // One step; empty when there was nothing to run.
  std::vector<EngineCoreOutput> step();
  bool has_unfinished_requests() const { return scheduler_.has_unfinished_requests(); }

  Scheduler& scheduler() { return scheduler_; }
  const Scheduler& scheduler() const { return scheduler_; }
  ModelRunner& runner() { return runner_; }

 private:
  Scheduler scheduler_;
  ModelRunner runner_;
};

}  // namespace parley
