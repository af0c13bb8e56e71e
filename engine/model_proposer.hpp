// Drafting with a model (vLLM's draft-model proposer, and LayerSkip's self-speculation): greedy drafts,
// one batched forward pass per draft position. A separate draft model keeps its own KV, in blocks with the
// target's ids; layer_skip runs the target's first layers over the target's own KV, whose first layers
// already hold exactly what the draft would compute, so it never catches up.
#pragma once
#include <memory>
#include <unordered_map>

#include "engine/proposer.hpp"
#include "model/kv_cache.hpp"
#include "model/llama.hpp"

namespace parley {

class ModelProposer final : public Proposer {
 public:
  // A separate draft model with its own KV cache (same block count and size as the target's).
  ModelProposer(std::unique_ptr<LlamaModel> draft, const KvCache& target_kv, int k, int max_model_len);
  // The target's first num_layers layers, then its final norm and head, over the target's KV.
  ModelProposer(LlamaModel& target, int num_layers, KvCache& target_kv, int k, int max_model_len);

  std::vector<std::vector<int>> propose(std::span<const DraftInput> requests) override;
  void remove_request(const std::string& req_id) override { drafted_.erase(req_id); }
  int k() const override { return k_; }
  void copy_block(int src, int dst) override {
    if (owned_kv_) owned_kv_->copy_block(src, dst);
  }

 private:
  // Where a request's own draft KV stands: positions [0, valid) hold its real tokens; the last pass wrote
  // tail[i] (a draft) at position tail_start + i, which stays valid where the verified tokens equal it.
  struct Drafted {
    int valid = 0;
    int tail_start = 0;
    std::vector<int> tail;
  };
  int catch_up_start(std::string_view req_id, std::span<const int> context);

  std::unique_ptr<LlamaModel> owned_model_;
  std::unique_ptr<KvCache> owned_kv_;
  LlamaModel& model_;
  KvCache& kv_;
  int num_layers_;
  bool shares_target_kv_;
  int k_, max_model_len_;
  std::unordered_map<std::string, Drafted> drafted_;  // own KV only
  ForwardBatch batch_;
  std::vector<float> logits_;
};

}  // namespace parley
