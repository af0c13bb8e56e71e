// Draft proposers for speculative decoding (vLLM v1's spec_decode proposers), behind one interface the
// worker calls after each step for the requests that sampled; the drafts are verified in their next step.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/speculative_config.hpp"

namespace parley {

class KvCache;
class LlamaModel;
struct Vocab;

// One request as a proposer sees it after a step that sampled for it.
struct DraftInput {
  std::string_view req_id;
  std::span<const int> context;  // prompt then output tokens; the newest (not yet in the KV) last
  std::span<const int>
      block_ids;  // its first KV group's blocks, and SpeculativeConfig::num_lookahead_tokens() slots past its step
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Up to k() drafts for each request (fewer or none is fine), in the order given.
  virtual std::vector<std::vector<int>> propose(std::span<const DraftInput> requests) = 0;
  // The request left the worker (finished, aborted, preempted): drop whatever the proposer keeps for it.
  virtual void remove_request(const std::string& req_id) { (void)req_id; }
  virtual int k() const = 0;
  // A proposer that drafts from the target's hidden states (MTP) receives, after every target pass, each
  // scheduled request's hidden states (dim floats each) for the positions from first_position on; those
  // of drafts that verification rejects are sent again, right, by the pass that recomputes them.
  virtual bool needs_hidden_states() const { return false; }
  virtual void observe_hidden(std::string_view req_id, int first_position, std::span<const float> hidden) {
    (void)req_id, (void)first_position, (void)hidden;
  }
  // The worker copied a block's KV (a split child's partial block): a proposer with KV of its own copies too.
  virtual void copy_block(int src, int dst) { (void)src, (void)dst; }
};

// What a proposer may use of the target: layer_skip drafts with the model's first layers over its KV;
// a draft model keeps its own KV in blocks with the same ids (the same block pool). The model and KV are the
// host's (DeviceModel::host_model / host_kv): null on a GPU, where only ngram runs.
struct ProposerTarget {
  LlamaModel* model;
  KvCache* kv;
  int max_model_len;
  const Vocab* vocab = nullptr;  // a draft model's vocabulary must equal it (nullptr: only the sizes are compared)
};

// The proposer a --speculative-config names. Throws std::invalid_argument for a configuration it cannot
// run (a draft whose vocabulary differs, draft_layers out of range, mtp without a head, a model-running method
// without a host model), naming the problem.
std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config, const ProposerTarget& target);

}  // namespace parley
