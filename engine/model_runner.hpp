// The worker's plain class (vLLM v1's GPUModelRunner, for one device): keeps the persistent input batch
// in step with each SchedulerOutput, builds the flattened forward batch, runs the model and samples.
// It never decides what runs: that is the scheduler's job.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/input_batch.hpp"
#include "engine/outputs.hpp"
#include "engine/pooler.hpp"
#include "engine/prompt_logprobs.hpp"
#include "engine/proposer.hpp"
#include "engine/sampler.hpp"
#include "engine/step_profile.hpp"
#include "engine/structured_output/mask_prefetch.hpp"
#include "model/device_model.hpp"

namespace parley {

class ModelRunner {
 public:
  // The KV cache has num_kv_blocks blocks of block_size tokens; max_num_seqs bounds the batch rows.
  // eos_token_ids are masked, with each request's stop_token_ids, until it has min_tokens (unless ignore_eos).
  ModelRunner(LlamaModel& model, int num_kv_blocks, int block_size, int max_num_seqs,
              std::vector<int> eos_token_ids = {});
  // The same on any device: the device model owns the weights' copy and the KV blocks there.
  ModelRunner(std::unique_ptr<DeviceModel> device, int max_num_seqs, std::vector<int> eos_token_ids = {});

  // One step: drop finished/preempted requests, add new ones, update cached ones, run every scheduled
  // token in one forward pass, sample each request whose scheduled tokens reach its end and append the
  // token to its row. Requests in the batch but not scheduled keep their rows untouched.
  // Throws std::logic_error if the SchedulerOutput names a request it does not hold (finished ids it
  // never saw are skipped: a request aborted while waiting), or schedules more than a request holds.
  ModelRunnerOutput execute_model(const SchedulerOutput& scheduler_output);

  // Speculative decoding: after each token it samples, a request gets drafts from the proposer; a step
  // that schedules drafts for it (scheduled_spec_decode_tokens) runs them in the same pass and verifies
  // them exactly (a draft stands while it equals what the request's own sampling draws there).
  // verify: exact (output identical to no speculation) or rejection (the same distribution).
  void set_proposer(std::unique_ptr<Proposer> proposer, SpecVerify verify = SpecVerify::Exact) {
    proposer_ = std::move(proposer);
    verify_mode_ = verify;
  }

  // Structured outputs: requests that carry one get a matcher from `manager` and a grammar mask when sampled.
  void set_structured_output(std::shared_ptr<structured::StructuredOutputManager> manager) {
    input_batch_.set_structured_output_manager(std::move(manager));
  }
  // On: each row's first grammar mask is walked on another thread during the forward pass; off: when sampled.
  // By default on where the pass leaves a core free (a GPU device, or fewer CPU threads than cores).
  void set_mask_prefetch(bool on) { mask_prefetch_on_ = on; }

  // Times the batch update, the forward pass and sampling into `profile` (null: off); the caller keeps it alive.
  void set_profile(StepProfile* profile) { profile_ = profile; }
  StepProfile* profile() const { return profile_; }

  const InputBatch& input_batch() const { return input_batch_; }
  DeviceModel& device() { return *device_; }
  const LlamaConfig& config() const { return device_->config(); }
  // The host KV cache (CPU device only: proposers that run the model need it); throws std::logic_error elsewhere.
  KvCache& kv_cache();
  // What a proposer may use: the host model and KV where the device has them.
  ProposerTarget proposer_target(int max_model_len, const Vocab* vocab) {
    return {device_->host_model(), device_->host_kv(), max_model_len, vocab};
  }

 private:
  void update_states(const SchedulerOutput& scheduler_output);
  void prepare_inputs(const SchedulerOutput& scheduler_output);
  void count_scheduled(const SchedulerOutput& scheduler_output);
  void reset_forward();
  void add_row(int row, int seq, int drafts, std::vector<int64_t>& verify_logits);
  void add_further_kv_groups(int num_seqs);
  void check_block_id(const std::string& req_id, int block_id) const;
  void check_block_ids(const std::string& req_id, const GroupBlockIds& block_ids) const;
  void drop_request(const std::string& req_id);
  void drop_all_requests();  // SchedulerOutput::reset_batch
  void plan_device_sampling();
  void start_mask_prefetch();
  SamplerOutput sample_on_host();
  // Samples a verifying row position by position; returns the drafts accepted.
  int verify(int row, int entry);
  // Feeds this step's final-normed hidden states to the pooling rows; a row whose prompt ended gets its vector.
  void pool_rows();
  PoolingType pooled_positions() const {
    return parley::pooled_positions(device_->config().pooling, device_->classifier());
  }
  void clear_results();
  void gather_results(ModelRunnerOutput& out);

  std::unique_ptr<DeviceModel> device_;
  StepProfile* profile_ = nullptr;
  InputBatch input_batch_;
  Sampler sampler_;
  ForwardBatch forward_;
  std::vector<float> logits_;
  DeviceSampling device_sampling_;                                      // this step's rows the device samples itself
  std::unordered_map<std::string, std::vector<uint64_t>> child_seeds_;  // parents awaiting their delayed split
  // A batch row's share of this step.
  struct RowStep {
    int num_scheduled = 0;  // tokens
    int num_drafts = 0;     // drafts among those
  };
  std::vector<RowStep> row_steps_;  // per batch row
  std::vector<int> entry_rows_;     // the batch row of each of the step's num_scheduled_tokens entries
  // What a scheduled row gave this step, per batch row (buffers reused from step to step).
  struct RowResult {
    std::vector<int> tokens;
    std::vector<TokenLogprobs> logprobs;
    int num_proposed_drafts = 0, num_drafts_ready = 0;
    std::vector<float> pooled;  // a pooling row's vector, when its prompt ended this step
  };
  std::vector<RowResult> results_;
  std::vector<PromptLogprobsChunk> prompt_logprobs_;  // per batch row: the prompt tokens it scored
  // A row sampling one token from the batch's logits (logits row i for sampled_[i]).
  struct SampledRow {
    int row;
    int64_t position;        // index of the token it samples
    bool on_device = false;  // the device drew it (plan_device_sampling)
  };
  std::vector<SampledRow> sampled_;
  // Rows verifying drafts: their logits rows follow the batch-sampled ones, 1 + drafts each.
  struct Verification {
    int row;
    int64_t position;  // index of the first token sampled (the one after the last real token)
    int first_logits_row;
    std::vector<int> drafts;    // kPlaceholderDraft where the proposer had none
    int num_proposed;           // real drafts among them
    int device_tokens_at = -1;  // where the device drew its positions: its first token in device_sampling_.tokens
  };
  std::vector<Verification> verifications_;
  // Pooling requests (vLLM's pooling models): each one's pool so far, and this step's rows that feed it.
  std::unordered_map<std::string, PooledSequence> pooling_;
  struct PooledRow {
    int row;
    int first_hidden;   // its first row in the device's normed_hidden_states()
    PooledRange range;  // the prompt positions it feeds this step
    bool ends;          // the step computes its prompt's last token
  };
  std::vector<PooledRow> pooled_rows_;
  PromptLogprobsRows prompt_rows_;  // this step's prompt positions scored for prompt_logprobs, after all of the above
  std::unique_ptr<Proposer> proposer_;
  SpecVerify verify_mode_ = SpecVerify::Exact;
  std::unordered_map<std::string, std::vector<int>> drafts_;  // per request: drafts for its next step
  bool mask_prefetch_on_;
  structured::MaskPrefetch mask_prefetch_;
  std::vector<int> mask_rows_;  // this step's sampled and verifying rows
};

}  // namespace parley
