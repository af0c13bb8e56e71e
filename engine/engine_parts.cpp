#include "engine/engine_parts.hpp"

#include "engine/pooler.hpp"

#include <stdexcept>
#include <string>

namespace parley {

SchedulerConfig with_speculation(SchedulerConfig c, const std::optional<SpeculativeConfig>& spec) {
  if (!spec) return c;
  c.num_speculative_tokens = spec->num_speculative_tokens;
  c.pad_uniform = spec->pad_uniform;
  c.num_lookahead_tokens = spec->num_lookahead_tokens();
  return c;
}

EngineParts make_engine_parts(std::unique_ptr<DeviceModel> device, SchedulerConfig config,
                              const std::optional<SpeculativeConfig>& speculative, const Vocab* vocab) {
  if (device->num_blocks() != config.num_kv_blocks)
    throw std::invalid_argument("the device holds " + std::to_string(device->num_blocks()) +
                                " KV blocks, the scheduler " + std::to_string(config.num_kv_blocks));
  config.kv_group_windows = device->kv_layout().group_windows();
  if (config.pooling != PoolingType::None)
    config.pooled_positions = pooled_positions(config.pooling, device->classifier());
  config = with_speculation(std::move(config), speculative);
  auto runner = std::make_unique<ModelRunner>(std::move(device), config.max_num_seqs, config.eos_token_ids);
  if (speculative)
    runner->set_proposer(make_proposer(*speculative, runner->proposer_target(config.max_model_len, vocab)),
                         speculative->verify);
  return {std::move(config), std::move(runner)};
}

}  // namespace parley
