// The continuous-batching scheduler (vLLM v1's Scheduler): each step it gives running requests their
// next tokens first, preempting the newest by recompute when blocks run out, then admits waiting
// requests FCFS within the token budget (chunking long prefills) and max_num_seqs. It never touches the
// model: the worker turns a SchedulerOutput into a ModelRunnerOutput, which update_from_output folds back.
//
// Steps may be pipelined (async scheduling): schedule() may plan step N+1 before step N's output is
// folded back. A request whose step N samples gets an output placeholder, so step N+1 gives it its next
// position, whose token only the worker knows yet (it keeps every sampled token in its persistent batch).
// Outputs must be folded back in step order. A request certain to reach max_tokens with the tokens in
// flight is not scheduled again; one that stops on EOS or a stop string wastes at most one step per step
// in flight, and tokens of steps planned before it finished (or was preempted) are discarded, never emitted.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/kv_cache_manager.hpp"
#include "engine/outputs.hpp"
#include "engine/request.hpp"
#include "engine/step_profile.hpp"
#include "model/llama_config.hpp"

namespace parley {

class KvConnectorScheduler;

struct SchedulerConfig {
  int max_num_batched_tokens = 2048;     // tokens per step
  int max_num_seqs = 256;                // running requests
  int max_model_len = 0;                 // context length (prompt + output)
  int long_prefill_token_threshold = 0;  // > 0: a prefill chunk takes at most this many tokens
  int max_waiting = 1024;                // waiting-queue bound in sequences (prompts x n): beyond it, 503
  int block_size = 16;
  int num_kv_blocks = 0;
  std::vector<int> kv_group_windows;  // per KV group its sliding window (0: full attention); empty: one group
  bool enable_prefix_caching = true;
  bool enable_delayed_split = true;     // n > 1: prefill once, then split; off: n independent requests
  std::vector<int> eos_token_ids;       // end a request unless ignore_eos
  int vocab_size = 0;                   // > 0: prompt token ids are checked against it
  int num_speculative_tokens = 0;       // k > 0: decode requests verify drafts (speculative decoding)
  bool pad_uniform = true;              // every decode request gets k drafts, placeholders where the worker has fewer
  int num_lookahead_tokens = 0;         // KV slots past each step's tokens that a drafting model's passes write
  std::string prompt_logprobs_refusal;  // non-empty: requests asking for prompt_logprobs are refused with it
  // The model's pooling (None: pooling requests are refused; Rank: they are score requests).
  PoolingType pooling = PoolingType::None;
  // The positions its requests read: `pooling`, a reranker's resolved to its head's token (set from the device by
  // make_engine_parts). Only Last reads cached prefixes: the others need the hidden state of the first or of every
  // prompt token.
  PoolingType pooled_positions = PoolingType::None;
  // The model attends both ways (an encoder): a prompt is computed whole in one step, never chunked; prefix caching
  // must be off (a token's KV depends on the tokens after it).
  bool bidirectional = false;
  void validate() const;  // throws std::invalid_argument naming the bad field
};

// Cumulative counters and a snapshot, for metrics and the admin view.
struct SchedulerStats {
  int num_running = 0;
  int num_waiting = 0;
  double kv_cache_usage = 0.0;
  int num_used_blocks = 0, num_cached_blocks = 0, num_free_blocks = 0, num_total_blocks = 0;
  int64_t prefix_cache_queries = 0, prefix_cache_hits = 0;
  int64_t num_preemptions = 0;
  int64_t prefill_tokens_computed = 0;  // prompt tokens whose KV was computed (not prefix-cache hits)
  int64_t num_steps = 0;
  int64_t num_discarded_tokens = 0;  // sampled in a step planned before the request finished or was preempted
  int64_t num_splits = 0;            // parallel-sampling parents split into their children
  int64_t num_pooled = 0, num_pooled_tokens = 0;  // pooling requests that produced their vector, their prompt tokens
  int peak_used_blocks = 0;                       // most blocks referenced at once since start
  int num_waiting_for_remote_kv = 0;  // decode side: holding blocks for KV from a prefill instance (in num_waiting)
  int num_held_for_transfer = 0;      // prefill side: handed off, blocks kept until the decode side has the KV
  int64_t num_step_failures = 0;      // lost steps resynchronised, and requests failed for their own fault
  // Speculative decoding (vLLM's SpecDecodingStats): verifications with a proposed draft, drafts proposed,
  // drafts accepted, and accepted per draft position.
  int64_t spec_num_drafts = 0, spec_num_draft_tokens = 0, spec_num_accepted_tokens = 0;
  std::vector<int64_t> spec_num_accepted_per_pos;
  // Steps in which every scheduled request decodes, and of those, the ones where each has 1 + k query tokens.
  int64_t num_decode_steps = 0, num_uniform_decode_steps = 0;
  // Forward passes the device ran by replaying a captured graph (CUDA full graphs), and eagerly.
  int64_t num_graph_replays = 0, num_eager_steps = 0;
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerConfig config);

  // Queues a request. Throws std::invalid_argument when it can never run (prompt over the context, more
  // blocks than the pool has, n over max_num_seqs) and QueueFull when its sequences would take the waiting
  // queue past max_waiting. A request with n > 1 carries its children's ids and seeds; it is prefilled once
  // and split (or, with the delayed split off, queued as n independent requests).
  struct QueueFull : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  void add_request(Request request);
  // add_request's checks for a request that can never run (std::invalid_argument), without queueing it.
  void check_request(const Request& request) const;
  // Aborts queued or running requests (unknown ids are ignored): blocks freed at once; the worker
  // hears of it in the next SchedulerOutput. Returns the ids that were live (every child id of a parent
  // that had not split yet).
  std::vector<std::string> finish_requests(const std::vector<std::string>& req_ids, RequestStatus status);

  SchedulerOutput schedule();
  // A step was lost (the runner failed, or its output did not fit its plan). The request the failure names,
  // or, when it names none, any caught in kMaxLostSteps such steps, end with `error` (their outputs are returned);
  // every other request the worker holds goes back to the queue to be recomputed (draws are keyed by seed and position:
  // the same tokens), every cached prefix is forgotten, and the next step tells the worker to drop its
  // whole batch. Outputs of steps planned before this are owed to no one (forget_stale_outputs).
  std::vector<EngineCoreOutput> resync(const std::string& culprit, const std::string& error);
  static constexpr int kMaxLostSteps = 2;
  // Appends sampled tokens, applies stop conditions and frees finished requests.
  std::vector<EngineCoreOutput> update_from_output(const SchedulerOutput& scheduler_output,
                                                   const ModelRunnerOutput& model_runner_output);

  bool has_unfinished_requests() const {
    return !running_.empty() || !waiting_.empty() || num_waiting_for_remote_kv() > 0;
  }

  // Prefill/decode disaggregation (the definitions are in scheduler_remote_kv.cpp): which requests wait for KV or
  // hold blocks for a transfer is the connector's to keep (vLLM's Scheduler.connector); the scheduler calls it.
  // Attached by the connector itself (null: none; requests that transfer KV need one).
  void attach_kv_connector(KvConnectorScheduler* connector) { connector_ = connector; }
  // Decode side: a FromPrefill request waits (WaitingForRemoteKv), its blocks allocated, until finish_remote_kv or
  // fail_remote_kv.
  // Decode side: the worker holds the request's prompt KV now; it continues from its first token(s) (n of them,
  // child by child, for an n > 1 request, which splits here). Unknown ids (aborted meanwhile) give nothing.
  std::vector<EngineCoreOutput> finish_remote_kv(const std::string& req_id, const std::vector<int>& first_tokens,
                                                 const std::vector<TokenLogprobs>& logprobs,
                                                 const std::vector<TokenLogprobs>& prompt_logprobs);
  // Decode side: the transfer failed. recompute: the request's blocks return and it is prefilled here, first in
  // the queue. Otherwise it is aborted; returns the ids that were live, as finish_requests does.
  std::vector<std::string> fail_remote_kv(const std::string& req_id, bool recompute);
  // Prefill side: a ToDecode request that sampled its first token(s) finished here but keeps its blocks, for
  // the KV transfer, until release_held (the decode side acknowledged, or the lease expired).
  void release_held(const std::string& req_id);
  int num_held() const;
  int num_waiting_for_remote_kv() const { return int(waiting_for_remote_kv().size()); }
  // Sampled tokens still to arrive from steps in flight for requests that finished or were preempted since.
  int num_stale_outputs() const;
  // No step is in flight any more: stale outputs that never came (a failed step) are forgotten.
  void forget_stale_outputs() { stale_outputs_.clear(), planned_steps_.clear(); }
  // Live requests with stop strings: none, and no output can end by one (the output processor's check).
  bool any_stop_strings() const { return num_with_stop_strings_ > 0; }
  // True when the worker still has to hear of finished requests or a reset (schedule() then yields a step).
  bool has_pending_finished() const { return !finished_req_ids_.empty() || reset_batch_; }
  int num_running() const { return int(running_.size()); }
  int num_waiting() const { return int(waiting_.size()); }
  // Rows of the worker's batch a request takes or reserves: a parent awaiting its split reserves one per child.
  static int rows_of(const Request& r);
  int num_rows() const;               // of running requests and those awaiting remote KV: at most max_num_seqs
  int num_waiting_sequences() const;  // rows_of summed over the waiting queue: at most max_waiting
  const Request* find(const std::string& req_id) const;
  std::vector<const Request*> requests() const;  // running, waiting, then waiting for remote KV
  SchedulerStats stats() const;
  const KVCacheManager& kv_cache_manager() const { return kv_; }
  // Forgets every cached prefix; refused (false) while a request holds a block, as vLLM's reset_prefix_cache.
  bool reset_prefix_cache() { return kv_.block_pool().reset_prefix_cache(); }
  const SchedulerConfig& config() const { return config_; }
  // Times schedule() and update_from_output() into `profile` (null: off); the caller keeps it alive.
  void set_profile(StepProfile* profile) { profile_ = profile; }
  StepProfile* profile() const { return profile_; }

 private:
  StepProfile* profile_ = nullptr;
  KvConnectorScheduler* connector_ = nullptr;
  KvConnectorScheduler& connector() const;                     // throws std::logic_error without one
  const std::vector<Request*>& waiting_for_remote_kv() const;  // in admission order
  void preempt(Request& request);
  // Back to the front of the queue with nothing computed (its blocks already returned).
  void requeue(Request& request);
  void free_request(Request& request);
  // Ends the request with an error the engine gives it (every child's output for a parent not split yet).
  void fail_request(Request& request, const std::string& error, std::vector<EngineCoreOutput>& outputs);
  // Outputs still in flight for the request will be dropped (it finished or lost its KV).
  void mark_outputs_stale(Request& request);
  // The finish status the request's last token gives it, or Running.
  RequestStatus check_stop(const Request& request) const;
  // Its tokens in flight reach max_tokens or the context: another step could not use its token.
  bool certain_to_finish(const Request& request) const;
  // Speculative decoding (defined in scheduler_spec.cpp). Drafts a decode request verifies in this step: k (padded), or
  // what the worker holds, within the context and the token budget left.
  int num_drafts_for(const Request& request, int budget_left) const;
  // n tokens to compute after num_computed, plus the lookahead slots the proposer writes (within the context).
  int with_lookahead(int num_computed, int n) const;
  // Folds back one verification: rejected drafts leave the computed tokens; the counters grow.
  void account_verification(Request& request, int num_drafts, int num_accepted, int num_proposed);
  void check_children(const Request& request) const;
  // The delayed split after the parent's prefill: children 1..n-1 share its prompt blocks; each gets its
  // first token. Appends every child's output (child 0 is the parent itself) to outputs.
  void split(Request& parent, std::span<const int> first_tokens, const std::vector<TokenLogprobs>& logprobs,
             std::vector<EngineCoreOutput>& outputs);
  // A pooling request's vector arrived: it finishes (Stop) and frees its blocks.
  EngineCoreOutput after_pooling(Request& request, const std::vector<float>& pooled);
  EngineCoreOutput after_tokens(Request& request, std::span<const int> tokens, std::vector<TokenLogprobs> logprobs);
  // Prefill side: the request's first token(s) go to its decode instance with its KV; its blocks stay held.
  EngineCoreOutput hand_off(Request& request, std::span<const int> tokens, std::vector<TokenLogprobs> logprobs);
  // Decode side: allocates the blocks a FromPrefill request's KV arrives into; false when the pool is short.
  bool admit_remote(Request& request);
  // A step's prompt logprobs for a request that still wants them (defined in prompt_logprobs.cpp).
  void take_prompt_logprobs(Request& request, const PromptLogprobsChunk& chunk);

  struct Scheduled {
    Request* request;            // null once it finished or was preempted: the step's output for it is stale
    int num_tokens, num_drafts;  // num_tokens includes the drafts
  };
  // A step sent and not folded back yet: its requests in num_scheduled_tokens order, so that folding it back
  // finds each without its id.
  struct PlannedStep {
    uint64_t step_id;
    std::vector<Scheduled> scheduled;
  };
  PlannedStep take_planned_step(const SchedulerOutput& so);
  // Folds one entry's sampled tokens into its request; throws when they do not fit it (update_from_output then
  // fails that request alone).
  void fold_entry(Request& r, const Scheduled& scheduled, size_t i, const ModelRunnerOutput& mro,
                  std::vector<EngineCoreOutput>& outputs);

  SchedulerConfig config_;
  KVCacheManager kv_;
  std::vector<Scheduled> scheduled_running_, scheduled_new_;  // schedule()'s lists, kept for their capacity
  std::unordered_map<std::string, std::unique_ptr<Request>> requests_;
  std::deque<Request*> waiting_;
  std::vector<Request*> running_;              // in admission order: the last is preempted first
  std::vector<std::string> finished_req_ids_;  // since the last step, for the worker
  // Takes the request's flag (Request::worker_knows); true when it was set, for the caller to tell the worker.
  static bool forget_worker_knows(Request& r) { return std::exchange(r.worker_knows, false); }
  std::vector<std::pair<int, int>> pending_block_copies_;  // split children's partial blocks, for the next step
  // Per request id: outputs of steps in flight planned before the request finished or was preempted, to drop.
  std::unordered_map<std::string, int> stale_outputs_;
  std::deque<PlannedStep> planned_steps_;  // oldest first
  int64_t num_preemptions_ = 0, prefill_tokens_computed_ = 0, num_steps_ = 0, num_splits_ = 0, num_discarded_ = 0;
  int64_t num_pooled_ = 0, num_pooled_tokens_ = 0;
  int64_t num_step_failures_ = 0;
  bool reset_batch_ = false;  // the next step tells the worker to drop its batch (after resync)
  int64_t spec_num_drafts_ = 0, spec_num_draft_tokens_ = 0, spec_num_accepted_ = 0;
  std::vector<int64_t> spec_accepted_per_pos_;
  int64_t num_decode_steps_ = 0, num_uniform_decode_steps_ = 0;
  int64_t num_graph_replays_ = 0, num_eager_steps_ = 0;
  int peak_used_blocks_ = 0;
  int num_with_parent_ = 0;  // live requests with a parent_req_id: stats() then counts user requests one by one
  int num_with_stop_strings_ = 0;
  // A request joins (or leaves) the scheduler's requests: the counts above follow.
  void count_live(const Request& r, int delta) {
    num_with_parent_ += r.parent_req_id.empty() ? 0 : delta;
    num_with_stop_strings_ += r.sampling_params.stop.empty() ? 0 : delta;
  }
};

}  // namespace parley
