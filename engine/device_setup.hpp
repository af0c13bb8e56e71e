// The device flags (--device, --devices, --dtype, --gpu-memory-utilization, --enforce-eager,
// --max-cudagraph-capture-size), checked together, and the worker's model on a GPU.
#pragma once
#include <memory>

#include "engine/engine_config.hpp"
#include "model/device_model.hpp"
#include "model/model_file.hpp"

namespace parley {

// Throws std::invalid_argument for a bad value or a flag of the other device (refused, not ignored).
void check_device_flags(const EngineConfig& c);
// How many engines the flags ask for: the --devices count on cuda, --data-parallel-size on the cpu.
int data_parallel_engines(const EngineConfig& c);
// Engine `rank` of `replicas` behind one front door: on cuda its GPU devices[rank], on the cpu its share of the CPUs.
EngineConfig replica_config(const EngineConfig& c, int rank, int replicas);

// The model on the GPU --devices names, with num_kv_blocks blocks (0: what --gpu-memory-utilization leaves),
// graphs for uniform decode batches of 1 + k tokens per request unless --enforce-eager.
std::unique_ptr<DeviceModel> make_cuda_device_model(const EngineConfig& c, const ModelFile& file,
                                                    const SchedulerConfig& sc, int num_kv_blocks);

}  // namespace parley
