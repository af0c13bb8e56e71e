#include "engine/device_setup.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "model/cuda/cuda_model.hpp"

namespace parley {

void check_device_flags(const EngineConfig& c) {
  const EngineConfig defaults;
  if (c.device == DeviceKind::Cpu) {
    if (!c.devices.empty() || (c.dtype != WeightDtype::Auto && c.dtype != WeightDtype::Float32) ||
        c.gpu_memory_utilization != defaults.gpu_memory_utilization || c.enforce_eager ||
        c.max_cudagraph_capture_size != defaults.max_cudagraph_capture_size)
      throw std::invalid_argument(
          "--devices, --dtype other than float32, --gpu-memory-utilization, --enforce-eager and "
          "--max-cudagraph-capture-size apply only to --device cuda");
    return;
  }
  if (c.isa != defaults.isa || c.threads != defaults.threads)
    throw std::invalid_argument("--isa and --threads apply only to --device cpu");
  for (size_t i = 0; i < c.devices.size(); ++i)
    if (c.devices[i] < 0 || std::count(c.devices.begin(), c.devices.end(), c.devices[i]) > 1)
      throw std::invalid_argument("--devices: each GPU id once, none negative");
  if (c.data_parallel_size != 1 && c.data_parallel_size != int(std::max<size_t>(1, c.devices.size())))
    throw std::invalid_argument(
        "--data-parallel-size with --device cuda must equal the number of --devices (one engine per GPU)");
  if (!(c.gpu_memory_utilization > 0 && c.gpu_memory_utilization <= 1))
    throw std::invalid_argument("--gpu-memory-utilization must be in (0, 1], got " +
                                std::to_string(c.gpu_memory_utilization));
  if ((c.scheduler.num_kv_blocks > 0 || c.kv_cache_memory_bytes > 0) &&
      c.gpu_memory_utilization != defaults.gpu_memory_utilization)
    throw std::invalid_argument(
        "--gpu-memory-utilization sizes the KV cache: give it or --num-kv-blocks / --kv-cache-memory, not both");
  if (c.max_cudagraph_capture_size < 1) throw std::invalid_argument("--max-cudagraph-capture-size must be at least 1");
  if (c.speculative && c.speculative->method != SpecMethod::Ngram)
    throw std::invalid_argument("--speculative-config: method " + c.speculative->method_name() +
                                " runs the model on the CPU; with --device cuda use ngram");
  std::string why;
  const int present = cuda::device_count(&why);
  if (present == 0) throw std::invalid_argument("--device cuda: " + why);
  for (int d : c.devices)
    if (d >= present)
      throw std::invalid_argument("--devices: GPU " + std::to_string(d) + " does not exist (" +
                                  std::to_string(present) + " present)");
}

int data_parallel_engines(const EngineConfig& c) {
  return c.device == DeviceKind::Cuda ? int(std::max<size_t>(1, c.devices.size())) : c.data_parallel_size;
}

EngineConfig replica_config(const EngineConfig& c, int rank, int replicas) {
  EngineConfig replica = c;
  if (c.device == DeviceKind::Cuda) replica.devices = {c.devices.at(size_t(rank))};
  replica.data_parallel_size = 1;
  replica.data_parallel_rank = rank, replica.data_parallel_engines = replicas;
  return replica;
}

std::unique_ptr<DeviceModel> make_cuda_device_model(const EngineConfig& c, const ModelFile& file,
                                                    const SchedulerConfig& sc, int num_kv_blocks) {
  cuda::CudaModelOptions o;
  o.device = c.devices.empty() ? 0 : c.devices[0];
  o.dtype = name_of(c.dtype == WeightDtype::Auto ? WeightDtype::Bfloat16 : c.dtype);
  cuda::DeviceLlamaOptions& m = o.model;
  m.num_blocks = num_kv_blocks;
  m.gpu_memory_utilization = c.gpu_memory_utilization;
  m.staging_bytes = c.role == Role::Colocated ? 0 : int64_t(256) << 20;  // KV transfers stage through the device
  m.block_size = sc.block_size;
  m.kv_dtype = kv_dtype_for(c.kv_cache_dtype, DeviceKind::Cuda);
  m.max_num_tokens = sc.max_num_batched_tokens;
  m.max_num_seqs = sc.max_num_seqs;
  m.max_model_len = sc.max_model_len;
  m.graph_query_len = 1 + sc.num_speculative_tokens;
  m.graph_batch_sizes =
      cuda::graph_batch_sizes(c.enforce_eager ? 0 : std::min(c.max_cudagraph_capture_size, sc.max_num_seqs));
  return cuda::make_model(file.config, file.weights, o);
}

}  // namespace parley
