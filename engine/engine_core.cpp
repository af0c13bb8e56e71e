#include "engine/engine_core.hpp"

namespace parley {

SchedulerConfig with_speculation(SchedulerConfig c, const std::optional<SpeculativeConfig>& spec) {
  if (!spec) return c;
  c.num_speculative_tokens = spec->num_speculative_tokens;
  c.pad_uniform = spec->pad_uniform;
  c.num_lookahead_tokens = spec->num_lookahead_tokens();
  return c;
}

// The scheduler keeps one block table per KV group of the device's cache.
SchedulerConfig with_kv_groups(SchedulerConfig c, const DeviceModel& device) {
  c.kv_group_windows = device.kv_layout().group_windows();
  return c;
}

EngineCore::EngineCore(LlamaModel& model, SchedulerConfig config, bool async_scheduling,
                       const std::optional<SpeculativeConfig>& speculative, const Vocab* vocab)
    // CpuDeviceModel's KvCache throws for a bad block size or count
    : EngineCore(std::make_unique<CpuDeviceModel>(model, config.num_kv_blocks, config.block_size), config,
                 async_scheduling, speculative, vocab) {}

EngineCore::EngineCore(std::unique_ptr<DeviceModel> device, SchedulerConfig config, bool async_scheduling,
                       const std::optional<SpeculativeConfig>& speculative, const Vocab* vocab)
    : pipeline_(with_speculation(with_kv_groups(std::move(config), *device), speculative), async_scheduling),
      runner_(std::move(device), scheduler().config().max_num_seqs, scheduler().config().eos_token_ids) {
  const SchedulerConfig& c = scheduler().config();
  if (runner_.device().num_blocks() != c.num_kv_blocks)
    throw std::invalid_argument("the device holds " + std::to_string(runner_.device().num_blocks()) +
                                " KV blocks, the scheduler " + std::to_string(c.num_kv_blocks));
  if (speculative)
    runner_.set_proposer(make_proposer(*speculative, runner_.proposer_target(c.max_model_len, vocab)),
                         speculative->verify);
}

// Runs every step the pipeline plans (two with async scheduling) and folds the oldest back: the order of the
// scheduler actor, whose worker runs step N+1 while step N's output is folded. A step that throws is lost
// and resynchronised (StepPipeline::fold): the requests it fails come back as outputs with their error.
std::vector<EngineCoreOutput> EngineCore::step() {
  while (StepPipeline::Plan plan = pipeline_.next_step()) {
    try {
      ran_.push_back(runner_.execute_model(*plan));
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
