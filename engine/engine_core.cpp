#include "engine/engine_core.hpp"

namespace parley {

EngineCore::EngineCore(LlamaModel& model, SchedulerConfig config)
    : scheduler_(std::move(config)),
      runner_(model, scheduler_.config().num_kv_blocks, scheduler_.config().block_size, scheduler_.config().max_num_seqs,
              scheduler_.config().eos_token_ids) {}

std::vector<EngineCoreOutput> EngineCore::step() {
  if (!scheduler_.has_unfinished_requests() && !scheduler_.has_pending_finished()) return {};
  const SchedulerOutput so = scheduler_.schedule();
  const ModelRunnerOutput mro = runner_.execute_model(so);
  return scheduler_.update_from_output(so, mro);
}

}  // namespace parley
