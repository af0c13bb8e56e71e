// Data parallelism: several engines (each its own scheduler, worker and KV cache: one per GPU with
// `--devices 0,1`, or `--data-parallel-size N` on the CPU) behind one EngineClient. A submission goes whole
// to the engine with the fewest requests outstanding; aborts go to the engine that holds the request;
// /metrics carries every engine's samples labelled engine="i".
#pragma once
#include <functional>
#include <memory>

#include "engine/engine_client.hpp"
#include "engine/engine_config.hpp"

namespace parley {

using EngineStarter = std::function<std::unique_ptr<EngineClient>(const EngineConfig&)>;

// Starts `replicas` engines with start_one (replica i on GPU devices[i] with --device cuda).
std::unique_ptr<EngineClient> start_data_parallel(const EngineConfig& config, int replicas,
                                                  const EngineStarter& start_one);

}  // namespace parley
