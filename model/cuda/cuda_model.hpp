// The model on a GPU, as the engine and the tests see it: no CUDA header here, so it is included freely and
// linked against cuda_model.cpp (nvcc found) or cuda_absent.cpp (no CUDA: every call explains that).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/device_model.hpp"
#include "model/kv_link.hpp"

namespace parley::cuda {

// Whether this build has the CUDA backend (nvcc was found when it was configured).
bool compiled();
// The CUDA devices present; 0 with *why filled in when there are none (or the build has no CUDA).
int device_count(std::string* why = nullptr);

struct DeviceMemory {
  int64_t free = 0, total = 0;  // bytes
};

struct DeviceLlamaOptions {
  int num_blocks = 0;                   // KV blocks; 0: as many as fit in gpu_memory_utilization's share
  double gpu_memory_utilization = 0.9;  // the share of the device's memory this instance may hold
  int64_t staging_bytes = 0;            // device memory kept for KV transfers' staging (PD), set aside before the KV
  int block_size = 16;
  KvDtype kv_dtype = KvDtype::F32;  // the KV blocks' element type (--kv-cache-dtype)
  int max_num_tokens = 0;           // tokens in one eager pass (the scheduler's max_num_batched_tokens)
  int max_num_seqs = 0;             // sequences in one pass
  int max_model_len = 0;
  int graph_query_len = 1;             // 1 + k: the query tokens of every request in a uniform decode batch
  std::vector<int> graph_batch_sizes;  // sequences per captured graph, ascending; empty: no graphs
  bool sample_on_device = true;        // plain rows sampled by the device (their logits stay there)
};

// The capture sizes vLLM uses: 1, 2, 4, 8, then steps of 8 up to max_batch.
inline std::vector<int> graph_batch_sizes(int max_batch) {
  std::vector<int> sizes;
  for (int b : {1, 2, 4})
    if (b < max_batch) sizes.push_back(b);
  for (int b = 8; b < max_batch; b += 8) sizes.push_back(b);
  if (max_batch > 0) sizes.push_back(max_batch);
  return sizes;
}

struct CudaModelOptions {
  int device = 0;
  std::string dtype = "bfloat16";  // of the GEMM weights: float32, bfloat16, float16
  DeviceLlamaOptions model;
};

// Uploads the weights to the device, allocates the KV blocks and captures the decode graphs.
// Throws std::invalid_argument for options it cannot honour and std::runtime_error for CUDA failures.
std::unique_ptr<DeviceModel> make_model(const LlamaConfig& config, const LlamaWeights& weights,
                                        const CudaModelOptions& options);

// NCCL links (model/kv_link.hpp) for KV transfers from or to this GPU: a 2-rank communicator per link, its
// transfers on their own stream. Throws std::invalid_argument where this build has no NCCL.
std::shared_ptr<KvLinkFactory> nccl_link_factory(int device);

}  // namespace parley::cuda
