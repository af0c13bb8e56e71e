// The engine as the HTTP server and `parley generate` see it: submit requests, receive their outputs
// through a sink, abort, ask for metrics and the admin view. No CAF here: this header is what keeps the
// actor framework out of the Beast translation units; actors/engine.cpp spawns and wires the actors.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/flag_choices.hpp"
#include "engine/output_processor.hpp"
#include "engine/sampling_params.hpp"
#include "engine/scheduler.hpp"
#include "engine/speculative_config.hpp"
#include "kernels/kv_dtype.hpp"
#include "model/llama_config.hpp"
#include "model/tokenizer.hpp"

namespace parley {

class KvLinkFactory;  // model/kv_link.hpp

// Receives one client request's outputs. Called from actor threads: implementations hand work to their
// own thread (an Asio strand) and must not block.
struct RequestSink {
  virtual ~RequestSink() = default;
  // The submission was admitted (before any output): a streaming response may send its headers now.
  virtual void on_admitted() {}
  // A delta for one of the request's engine requests (req_id tells which); the last has finished() set.
  virtual void on_output(const RequestOutput& output) = 0;
  // The whole submission was refused before any output (status 503 queue full, 400 can never fit).
  virtual void on_rejected(int status, const std::string& message) = 0;
};

// One engine request: a prompt and its parameters. With params.n > 1 it is a parallel-sampling parent:
// child_req_ids names its n children (the first is req_id itself); child i is seeded seed + i, or, with
// no seed, each child draws its own at admission. Outputs arrive under the children's ids.
struct EngineRequestSpec {
  std::string req_id;
  std::vector<int> prompt_token_ids;
  SamplingParams params;  // an unset seed is drawn at admission
  std::vector<std::string> child_req_ids;
  std::optional<PoolingParams> pooling;  // set: a pooling request (params is unused)
};

struct EngineConfig {
  std::string model_path, tokenizer_path;  // empty model: the built-in random model
  std::string served_model_name;           // empty: derived from the model file name
  int threads = 0;
  std::string isa = "auto";
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
  std::vector<std::string> prefill_peers;       // decode: host:port of each prefill instance's --kv-port
  std::string prefill_routing = "round_robin";  // decode: round_robin or least_loaded
  bool kv_recompute_on_failure = true;          // decode: --kv-load-failure-policy recompute (else fail)
  double kv_transfer_timeout_s = 30;            // decode: a transfer's deadline; prefill: the lease on its blocks
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
  std::string dtype =
      "auto";  // --dtype of the GEMM weights: auto (cpu float32, cuda bfloat16), float32, bfloat16, float16
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

class EngineClient {
 public:
  virtual ~EngineClient() = default;
  // Loads the model and spawns the actors. Throws std::runtime_error / std::invalid_argument on bad config.
  static std::unique_ptr<EngineClient> start(const EngineConfig& config);

  // All-or-nothing admission of a client request's engine requests.
  virtual void submit(std::vector<EngineRequestSpec> requests, std::shared_ptr<RequestSink> sink) = 0;
  // Client cancel or disconnect: each live id finishes with `abort` and its blocks return to the pool.
  virtual void abort(std::vector<std::string> req_ids) = 0;
  // Aborts every live request (graceful shutdown after its grace period).
  virtual void abort_all() = 0;
  // Prometheus text of every metric.
  virtual void metrics(std::function<void(std::string)> reply) = 0;
  // JSON: every actor with its mailbox depth and messages handled.
  virtual void admin_actors(std::function<void(std::string)> reply) = 0;
  // JSON: every live request (state, tokens, blocks, parent) and the KV block pool.
  virtual void admin_requests(std::function<void(std::string)> reply) = 0;
  // Forgets every cached prefix: true, or false while a request holds a block (vLLM's reset_prefix_cache).
  virtual void reset_prefix_cache(std::function<void(bool)> reply) = 0;
  // Aborts what is live and stops every actor; waits for them.
  virtual void shutdown() = 0;

  virtual const Tokenizer& tokenizer() const = 0;
  virtual const std::string& model_name() const = 0;
  virtual int max_model_len() const = 0;
  virtual const LlamaConfig& model_config() const = 0;  // the served model's architecture and shape
  virtual const std::string& chat_template() const = 0;
  virtual std::vector<int> eos_token_ids() const = 0;
  virtual int max_n() const = 0;
  // The CPUs its actor threads are pinned to (--cpu-affinity auto), where the HTTP threads belong too; empty: none.
  virtual std::vector<int> service_cpus() const { return {}; }
};

}  // namespace parley
