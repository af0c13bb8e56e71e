// The two halves of one engine, built in one place (vLLM's EngineCore.__init__): the scheduler's config, fitted
// to the device's KV cache and the speculative config, and the model runner over the device, with its proposer.
// EngineCore runs them in one thread; the actor engine (engine/loaded_engine.hpp) hands them to its actors.
#pragma once
#include <memory>
#include <optional>

#include "engine/model_runner.hpp"
#include "engine/scheduler.hpp"
#include "engine/speculative_config.hpp"

namespace parley {

// The scheduler's side of a speculative config: k drafts per decode request, padding, the proposer's lookahead.
SchedulerConfig with_speculation(SchedulerConfig config, const std::optional<SpeculativeConfig>& speculative);

struct EngineParts {
  SchedulerConfig scheduler_config;     // one block table per KV group of the device's cache
  std::unique_ptr<ModelRunner> runner;  // owns the device model and its KV cache
};

// config.num_kv_blocks must equal the device's block count. With a speculative config the scheduler gives decode
// requests its k drafts and the runner proposes and verifies them; vocab is what a draft model's vocabulary must
// equal (nullptr: only the sizes are compared).
EngineParts make_engine_parts(std::unique_ptr<DeviceModel> device, SchedulerConfig config,
                              const std::optional<SpeculativeConfig>& speculative = std::nullopt,
                              const Vocab* vocab = nullptr);

}  // namespace parley
