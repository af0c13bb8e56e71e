#include "engine/mtp_proposer.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace parley {
namespace {

LlamaConfig one_layer(LlamaConfig c) {
  c.n_layers = 1;
  return c;
}

}  // namespace

MtpProposer::MtpProposer(LlamaModel& target, const KvCache& target_kv, int k, int max_model_len)
    : model_(target),
      kv_(one_layer(target.config()), target_kv.num_blocks(), target_kv.block_size(), target_kv.dtype()),
      k_(k),
      max_model_len_(max_model_len) {
  if (!target.has_mtp()) throw std::invalid_argument("the target model has no multi-token-prediction head");
}

void MtpProposer::observe_hidden(std::string_view req_id, int first_position, std::span<const float> hidden) {
  const size_t dim = size_t(model_.config().dim);
  auto [it, is_new] = state_.try_emplace(std::string(req_id));
  State& s = it->second;
  const int stored_end = s.hidden_start + int(s.hidden.size() / dim);
  if (is_new || first_position < s.hidden_start || first_position > stored_end) {
    // New here, or a gap the head cannot fill: it drafts from here on, over whatever KV earlier positions left.
    if (is_new || first_position > stored_end) s.valid = first_position;
    s.valid = std::min(s.valid, first_position);
    s.hidden_start = first_position;
    s.hidden.clear();
  }
  s.hidden.resize(size_t(first_position - s.hidden_start) * dim);  // what this pass recomputed replaces the rest
  s.hidden.insert(s.hidden.end(), hidden.begin(), hidden.end());
}

std::vector<std::vector<int>> MtpProposer::propose(std::span<const DraftInput> requests) {
  const int bs = kv_.block_size(), vocab = model_.config().vocab_size, dim = model_.config().dim;
  std::vector<std::vector<int>> drafts(requests.size());
  std::vector<int> wanted(requests.size(), 0), seq(requests.size(), -1), from(requests.size(), 0);
  std::vector<State*> states(requests.size(), nullptr);
  ForwardBatch& f = batch_;
  f.max_blocks_per_seq = 1;
  int num_seqs = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const int L = int(requests[i].context.size());
    const auto it = state_.find(std::string(requests[i].req_id));
    if (it == state_.end() || L < 2) continue;
    State& s = it->second;
    // The head's positions from..L-2 take the target's hidden states there with tokens from+1..L-1.
    from[i] = std::max(s.valid, s.hidden_start);
    const int stored_end = s.hidden_start + int(s.hidden.size() / size_t(dim));
    if (from[i] > L - 2 || stored_end < L - 1) continue;  // no hidden state for the newest position
    // Draft j is the token at index L - 1 + j; passes write up to position L + m - 3, inside the blocks held.
    const int room = std::min(model_.config().max_seq_len, int(requests[i].block_ids.size()) * bs);
    wanted[i] = std::min({k_, max_model_len_ - 1 - L, room - L + 1});
    if (wanted[i] <= 0) continue;
    states[i] = &s;
    seq[i] = num_seqs++;
    f.max_blocks_per_seq = std::max(f.max_blocks_per_seq, int(requests[i].block_ids.size()));
  }
  if (num_seqs == 0) return drafts;
  f.block_tables.assign(size_t(num_seqs) * f.max_blocks_per_seq, 0);
  for (size_t i = 0; i < requests.size(); ++i)
    if (seq[i] >= 0)
      std::copy(requests[i].block_ids.begin(), requests[i].block_ids.end(),
                f.block_tables.begin() + size_t(seq[i]) * f.max_blocks_per_seq);
  std::vector<std::vector<float>> head_hidden(requests.size());  // the head's last hidden state per request
  for (int j = 0; j < k_; ++j) {
    for (auto* v : {&f.token_ids, &f.positions, &f.token_seq, &f.logits_indices}) v->clear();
    f.slot_mapping.clear();
    prev_hidden_.clear();
    std::vector<size_t> order;
    auto add = [&](size_t i, int token, int position, const float* hidden) {
      f.token_ids.push_back(token);
      f.positions.push_back(position);
      f.token_seq.push_back(seq[i]);
      f.slot_mapping.push_back(int64_t(requests[i].block_ids[size_t(position / bs)]) * bs + position % bs);
      prev_hidden_.insert(prev_hidden_.end(), hidden, hidden + dim);
    };
    for (size_t i = 0; i < requests.size(); ++i) {
      if (wanted[i] <= j) continue;
      const auto context = requests[i].context;
      const int L = int(context.size());
      if (j == 0) {
        const State& s = *states[i];
        for (int p = from[i]; p <= L - 2; ++p)
          add(i, context[size_t(p + 1)], p, s.hidden.data() + size_t(p - s.hidden_start) * dim);
      } else {
        add(i, drafts[i].back(), L - 2 + j, head_hidden[i].data());
      }
      f.logits_indices.push_back(f.num_tokens() - 1);
      order.push_back(i);
    }
    if (order.empty()) break;
    model_.mtp_forward(f, prev_hidden_, kv_, logits_, hidden_out_);
    for (size_t r = 0; r < order.size(); ++r) {
      const float* row = logits_.data() + r * size_t(vocab);
      drafts[order[r]].push_back(int(std::max_element(row, row + vocab) - row));
      const float* h = hidden_out_.data() + size_t(f.logits_indices[r]) * dim;
      head_hidden[order[r]].assign(h, h + dim);
    }
  }
  for (size_t i = 0; i < requests.size(); ++i)
    if (states[i]) {  // positions from L - 1 on hold drafts' KV and hidden states: recomputed by the next pass
      const int L = int(requests[i].context.size());
      states[i]->valid = L - 1;
      states[i]->hidden_start = L - 1;
      states[i]->hidden.clear();
    }
  return drafts;
}

}  // namespace parley
