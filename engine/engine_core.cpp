#include "engine/engine_core.hpp"

namespace parley {

EngineCore::EngineCore(LlamaModel& model, SchedulerConfig config, bool async_scheduling,
                       const std::optional<SpeculativeConfig>& speculative, const Vocab* vocab)
    // CpuDeviceModel's KvCache throws for a bad block size or count
    : EngineCore(std::make_unique<CpuDeviceModel>(model, config.num_kv_blocks, config.block_size), config,
                 async_scheduling, speculative, vocab) {}

EngineCore::EngineCore(std::unique_ptr<DeviceModel> device, SchedulerConfig config, bool async_scheduling,
                       const std::optional<SpeculativeConfig>& speculative, const Vocab* vocab)
    : EngineCore(make_engine_parts(std::move(device), std::move(config), speculative, vocab), async_scheduling) {}

EngineCore::EngineCore(EngineParts parts, bool async_scheduling)
    : pipeline_(std::move(parts.scheduler_config), async_scheduling), runner_(std::move(parts.runner)) {}

// Runs every step the pipeline plans (two with async scheduling) and folds the oldest back: the order of the
// scheduler actor, whose worker runs step N+1 while step N's output is folded. A step that throws is lost
// and resynchronised (StepPipeline::fold): the requests it fails come back as outputs with their error.
std::vector<EngineCoreOutput> EngineCore::step() {
  while (StepPipeline::Plan plan = pipeline_.next_step()) {
    try {
      ran_.push_back(runner_->execute_model(*plan));
    } catch (const std::exception& e) {
      ran_.push_back(failed_step(plan->step_id, e));
    }
  }
  if (ran_.empty()) return {};
  StepPipeline::Folded folded = pipeline_.fold(ran_.front());
  ran_.pop_front();
  return std::move(folded.outputs);
}

}  // namespace parley
