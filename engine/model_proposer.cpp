#include "engine/model_proposer.hpp"

#include <algorithm>
#include <string>

namespace parley {

ModelProposer::ModelProposer(std::unique_ptr<LlamaModel> draft, const KvCache& target_kv, int k, int max_model_len)
    : owned_model_(std::move(draft)),
      // Its layers' KV sits at the target's first (full-attention) group's block ids: one group of its own.
      owned_kv_(std::make_unique<KvCache>(owned_model_->config(), target_kv.num_blocks(), target_kv.block_size(),
                                          target_kv.dtype(),
                                          KvCacheLayout::single_group(owned_model_->config().n_layers))),
      model_(*owned_model_),
      kv_(*owned_kv_),
      num_layers_(owned_model_->config().n_layers),
      shares_target_kv_(false),
      k_(k),
      max_model_len_(max_model_len) {}

ModelProposer::ModelProposer(LlamaModel& target, int num_layers, KvCache& target_kv, int k, int max_model_len)
    : model_(target),
      kv_(target_kv),
      num_layers_(num_layers),
      shares_target_kv_(true),
      k_(k),
      max_model_len_(max_model_len) {}

int ModelProposer::catch_up_start(std::string_view req_id, std::span<const int> context) {
  const int last = int(context.size()) - 1;  // the newest token, never in the KV yet
  if (shares_target_kv_) return last;        // the target's first layers hold everything before it
  const auto it = drafted_.find(std::string(req_id));
  if (it == drafted_.end()) return 0;  // new here (or back from preemption): draft the whole context
  const Drafted& d = it->second;
  int valid = std::min(d.valid, last);
  // Drafts the last passes fed in that verification kept stand for real tokens now.
  while (valid < last && valid >= d.tail_start && valid - d.tail_start < int(d.tail.size()) &&
         context[size_t(valid)] == d.tail[size_t(valid - d.tail_start)])
    ++valid;
  return valid;
}

std::vector<std::vector<int>> ModelProposer::propose(std::span<const DraftInput> requests) {
  const int bs = kv_.block_size(), vocab = model_.config().vocab_size;
  std::vector<std::vector<int>> drafts(requests.size());
  std::vector<int> wanted(requests.size(), 0), seq(requests.size(), -1);
  ForwardBatch& f = batch_;
  f.max_blocks_per_seq = 1;
  int num_seqs = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const int L = int(requests[i].context.size());
    // Draft i is the token at index L + i; verifying it samples there and one further, inside the context.
    // The passes write positions L - 1 .. L + m - 2, inside the draft's context and the blocks held.
    const int room = std::min(model_.config().max_seq_len, int(requests[i].block_ids.size()) * bs);
    wanted[i] = L == 0 ? 0 : std::min({k_, max_model_len_ - 1 - L, room - L + 1});
    if (wanted[i] <= 0) continue;
    seq[i] = num_seqs++;
    f.max_blocks_per_seq = std::max(f.max_blocks_per_seq, int(requests[i].block_ids.size()));
  }
  if (num_seqs == 0) return drafts;
  for (auto* v : {&f.token_ids, &f.positions, &f.token_seq, &f.logits_indices}) v->clear();
  f.slot_mapping.clear();
  f.block_tables.assign(size_t(num_seqs) * f.max_blocks_per_seq, 0);
  for (size_t i = 0; i < requests.size(); ++i)
    if (seq[i] >= 0)
      std::copy(requests[i].block_ids.begin(), requests[i].block_ids.end(),
                f.block_tables.begin() + size_t(seq[i]) * f.max_blocks_per_seq);
  auto add_token = [&](size_t i, int token, int position) {
    f.token_ids.push_back(token);
    f.positions.push_back(position);
    f.token_seq.push_back(seq[i]);
    f.slot_mapping.push_back(int64_t(requests[i].block_ids[size_t(position / bs)]) * bs + position % bs);
  };
  // Pass j feeds each request its input at position L - 1 + j (pass 0 first catches the draft's KV up) and
  // takes the argmax of what follows as draft j.
  for (int j = 0; j < k_; ++j) {
    for (auto* v : {&f.token_ids, &f.positions, &f.token_seq, &f.logits_indices}) v->clear();
    f.slot_mapping.clear();
    std::vector<size_t> order;
    for (size_t i = 0; i < requests.size(); ++i) {
      if (wanted[i] <= j) continue;
      const auto context = requests[i].context;
      const int L = int(context.size());
      if (j == 0)
        for (int p = catch_up_start(requests[i].req_id, context); p < L; ++p) add_token(i, context[size_t(p)], p);
      else
        add_token(i, drafts[i].back(), L - 1 + j);
      f.logits_indices.push_back(f.num_tokens() - 1);
      order.push_back(i);
    }
    if (order.empty()) break;
    model_.forward(f, kv_, logits_, num_layers_);
    for (size_t r = 0; r < order.size(); ++r) {
      const float* row = logits_.data() + r * size_t(vocab);
      drafts[order[r]].push_back(int(std::max_element(row, row + vocab) - row));  // the first of equal maxima
    }
  }
  if (!shares_target_kv_)
    for (size_t i = 0; i < requests.size(); ++i)
      if (wanted[i] > 0) {
        const int L = int(requests[i].context.size());
        drafted_[std::string(requests[i].req_id)] = {L, L, std::vector<int>(drafts[i].begin(), drafts[i].end() - 1)};
      }
  return drafts;
}

}  // namespace parley
