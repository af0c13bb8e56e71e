// One engine's flags as `parley serve` and `parley generate` parse them (actors/main.cpp): every choice an enum
// by then. engine/loaded_engine.hpp builds an engine from them; the HTTP layer never sees them.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/flag_choices.hpp"
#include "engine/scheduler.hpp"
#include "engine/speculative_config.hpp"
#include "kernels/cpu/isa.hpp"
#include "kernels/kv_dtype.hpp"

namespace parley {

class KvLinkFactory;  // model/kv_link.hpp

struct EngineConfig {
  std::string model_path, tokenizer_path;  // empty model: the built-in random model
  std::string served_model_name;           // empty: derived from the model file name
  int threads = 0;
  cpu::Isa isa = cpu::Isa::Auto;                 // --isa
  SchedulerConfig scheduler;                     // num_kv_blocks 0: sized from kv_cache_memory_bytes
  int64_t kv_cache_memory_bytes = 0;             // 0 with num_kv_blocks 0: enough for max_num_seqs full contexts
  std::optional<KvDtype> kv_cache_dtype;         // --kv-cache-dtype; none: auto (kv_dtype_for)
  int max_n = 64;                                // the largest n a request may ask for
  bool async_scheduling = true;                  // plan step N+1 while the worker runs step N
  std::optional<SpeculativeConfig> speculative;  // --speculative-config
  // Prefill/decode disaggregation.
  Role role = Role::Colocated;  // --role colocated|prefill|decode
  int kv_port = 0;              // prefill: where its KV transfer actor is published
  std::string kv_host;          // prefill: the address it is bound to ("": every interface)
  std::string kv_secret_file;   // --kv-secret: peers prove they hold this file's secret (engine/kv_peer_auth.hpp)
  std::vector<std::string> prefill_peers;                     // decode: host:port of each prefill instance's --kv-port
  RoutingPolicy prefill_routing = RoutingPolicy::RoundRobin;  // decode: --prefill-routing
  bool kv_recompute_on_failure = true;                        // decode: --kv-load-failure-policy recompute (else fail)
  double kv_transfer_timeout_s = 30;  // decode: a transfer's deadline; prefill: the lease on its blocks
  KvTransport kv_transport =
      KvTransport::Tcp;  // --kv-transport: the KV as bytes through the actors (tcp) or GPU to GPU (nccl)
  std::shared_ptr<KvLinkFactory> kv_link_factory;  // device links other than NCCL's (the tests' in-process stand-in)
  // Where the model runs.
  DeviceKind device = DeviceKind::Cpu;  // --device cpu|cuda
  std::vector<int> devices;             // --devices: the GPU ids, one engine each (empty: device 0)
  int data_parallel_size = 1;  // --data-parallel-size: engines behind one front door (cuda: one per --devices id)
  // Set by the data-parallel front on each engine it starts: engine `rank` of `engines` (they split the CPUs).
  int data_parallel_rank = 0, data_parallel_engines = 1;
  CpuAffinity cpu_affinity = CpuAffinity::Auto;  // --cpu-affinity (engine/thread_placement.hpp)
  EngineTask task = EngineTask::Auto;            // --task: resolved by resolve_task
  std::optional<PoolingType> pooling;            // --pooling: instead of the file's {arch}.pooling_type
  WeightDtype dtype = WeightDtype::Auto;         // --dtype of the GEMM weights
  double gpu_memory_utilization =
      0.9;                     // --gpu-memory-utilization: the share of a GPU's memory for weights, activations and KV
  bool enforce_eager = false;  // --enforce-eager: no CUDA graphs
  int max_cudagraph_capture_size =
      256;  // --max-cudagraph-capture-size: the largest captured decode batch (capped at max-num-seqs)
  std::shared_ptr<StepProfile> profile;  // where each step's time goes (bench_async_scheduling); null: not timed
};

// --kv-cache-dtype's choice: the one given, else auto's for the device (docs/models.md, "KV cache dtype": why).
inline KvDtype kv_dtype_for(std::optional<KvDtype> given, DeviceKind device) {
  if (given) return *given;
  return device == DeviceKind::Cuda ? KvDtype::Bf16 : KvDtype::F32;
}

}  // namespace parley
