// Drafting with the target's multi-token-prediction head (vLLM's MTP proposer for DeepSeek-style heads):
// the head at position p takes the target's hidden state there and the embedding of token p + 1 and
// predicts token p + 2. Drafts are greedy; the first comes from the target's hidden state before the newest
// token, each further one from the head's own hidden state (recursive, as vLLM runs k > 1). The head keeps
// its one layer of KV in blocks with the target's ids and catches up on the positions the target computed
// since it last drafted, whose hidden states the worker hands it after every pass.
#pragma once
#include <memory>
#include <unordered_map>

#include "engine/proposer.hpp"
#include "model/kv_cache.hpp"
#include "model/llama.hpp"

namespace parley {

class MtpProposer final : public Proposer {
 public:
  // Throws std::invalid_argument when the target has no MTP head.
  MtpProposer(LlamaModel& target, const KvCache& target_kv, int k, int max_model_len);

  std::vector<std::vector<int>> propose(std::span<const DraftInput> requests) override;
  void remove_request(const std::string& req_id) override { state_.erase(req_id); }
  int k() const override { return k_; }
  bool needs_hidden_states() const override { return true; }
  void observe_hidden(std::string_view req_id, int first_position, std::span<const float> hidden) override;
  void copy_block(int src, int dst) override { kv_.copy_block(src, dst); }

 private:
  // Per request: the head's KV holds positions [0, valid) (those before the request came here are taken as
  // the prefix cache left them); hidden holds the target's hidden states for positions hidden_start on.
  struct State {
    int valid = 0;
    int hidden_start = 0;
    std::vector<float> hidden;
  };

  LlamaModel& model_;
  KvCache kv_;
  int k_, max_model_len_;
  std::unordered_map<std::string, State> state_;
  ForwardBatch batch_;
  std::vector<float> prev_hidden_, logits_, hidden_out_;
};

}  // namespace parley
