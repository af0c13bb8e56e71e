// The worker's plain class (vLLM v1's GPUModelRunner, for one device): keeps the persistent input batch
// in step with each SchedulerOutput, builds the flattened forward batch, runs the model and samples.
// It never decides what runs: that is the scheduler's job.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>

#include "engine/input_batch.hpp"
#include "engine/outputs.hpp"
#include "engine/sampler.hpp"
#include "model/kv_cache.hpp"
#include "model/llama.hpp"

namespace parley {

class ModelRunner {
 public:
  // The KV cache has num_kv_blocks blocks of block_size tokens; max_num_seqs bounds the batch rows.
  ModelRunner(LlamaModel& model, int num_kv_blocks, int block_size, int max_num_seqs);

  // One step: drop finished/preempted requests, add new ones, update cached ones, run every scheduled
  // token in one forward pass, sample each request whose scheduled tokens reach its end.
  // Throws std::logic_error if the SchedulerOutput names a request it does not hold.
  ModelRunnerOutput execute_model(const SchedulerOutput& scheduler_output);

  const InputBatch& input_batch() const { return input_batch_; }
  KvCache& kv_cache() { return kv_; }
  const LlamaModel& model() const { return model_; }

 private:
  LlamaModel& model_;
  KvCache kv_;
  int block_size_;
  InputBatch input_batch_;
  Sampler sampler_;
  ForwardBatch forward_;
  std::vector<float> logits_;
};

}  // namespace parley
