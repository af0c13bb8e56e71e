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
    : EngineCore(std::make_unique<CpuDeviceModel>(model, config.num_kv_blocks, config.block_size), config, async_scheduling,
                 speculative, vocab) {}

EngineCore::EngineCore(std::unique_ptr<DeviceModel> device, SchedulerConfig config, bool async_scheduling,
                       const std::optional<SpeculativeConfig>& speculative, const Vocab* vocab)
    : scheduler_(with_speculation(with_kv_groups(std::move(config), *device), speculative)),
      runner_(std::move(device), scheduler_.config().max_num_seqs, scheduler_.config().eos_token_ids),
      async_scheduling_(async_scheduling) {
  if (runner_.device().num_blocks() != scheduler_.config().num_kv_blocks)
    throw std::invalid_argument("the device holds " + std::to_string(runner_.device().num_blocks()) + " KV blocks, the scheduler " +
                                std::to_string(scheduler_.config().num_kv_blocks));
  if (speculative) runner_.set_proposer(make_proposer(*speculative, runner_.proposer_target(scheduler_.config().max_model_len, vocab)), speculative->verify);
}

std::optional<EngineCore::StepInFlight> EngineCore::run_next() {
  if (!scheduler_.has_unfinished_requests() && !scheduler_.has_pending_finished()) return std::nullopt;
  SchedulerOutput so = scheduler_.schedule();
  if (!so.has_work()) return std::nullopt;
  ModelRunnerOutput mro = runner_.execute_model(so);
  return StepInFlight{std::move(so), std::move(mro)};
}

std::vector<EngineCoreOutput> EngineCore::step() {
  if (!async_scheduling_) {
    auto done = run_next();
    return done ? scheduler_.update_from_output(done->scheduler_output, done->model_runner_output)
                : std::vector<EngineCoreOutput>{};
  }
  if (!in_flight_) in_flight_ = run_next();
  if (!in_flight_) return {};
  // Plan step N+1 before step N's output is known, as the scheduler actor does while the worker runs N.
  std::optional<SchedulerOutput> next;
  if (scheduler_.has_unfinished_requests() || scheduler_.has_pending_finished()) next = scheduler_.schedule();
  StepInFlight done = std::move(*in_flight_);
  in_flight_.reset();
  auto outputs = scheduler_.update_from_output(done.scheduler_output, done.model_runner_output);
  if (next && next->has_work()) {
    ModelRunnerOutput mro = runner_.execute_model(*next);
    in_flight_ = StepInFlight{std::move(*next), std::move(mro)};
  }
  return outputs;
}

}  // namespace parley
