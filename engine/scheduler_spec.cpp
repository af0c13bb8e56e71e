// The scheduler's side of speculative decoding: how many drafts a decode request verifies,
// the lookahead slots a drafting model writes, and folding a verification back into the request.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/scheduler.hpp"

namespace parley {

int Scheduler::with_lookahead(int num_computed, int n) const {
  return n + std::max(0, std::min(config_.num_lookahead_tokens, config_.max_model_len - (num_computed + n)));
}

int Scheduler::num_drafts_for(const Request& r, int budget_left) const {
  const int k = config_.num_speculative_tokens;
  if (k == 0) return 0;
  int drafts = config_.pad_uniform ? k : std::min(k, r.num_drafts_ready);
  // The worker samples at token index num_tokens + i for i = 0..drafts: each must fit the context.
  drafts = std::min(
      drafts, config_.max_model_len - 1 - (r.num_tokens() + r.num_output_placeholders + r.num_draft_placeholders));
  return std::max(0, std::min(drafts, budget_left));
}

void Scheduler::account_verification(Request& r, int num_drafts, int num_accepted, int num_proposed) {
  if (num_accepted < 0 || num_accepted > num_drafts || num_accepted > num_proposed)
    throw std::logic_error("request " + r.request_id + ": " + std::to_string(num_accepted) + " drafts accepted of " +
                           std::to_string(num_drafts) + " verified (" + std::to_string(num_proposed) + " proposed)");
  r.num_computed_tokens -= num_drafts - num_accepted;  // rejected positions are recomputed with the right tokens
  r.num_draft_placeholders -= num_drafts;
  if (num_proposed == 0) return;
  ++spec_num_drafts_;
  spec_num_draft_tokens_ += num_proposed;
  spec_num_accepted_ += num_accepted;
  spec_accepted_per_pos_.resize(size_t(config_.num_speculative_tokens), 0);
  for (int i = 0; i < num_accepted; ++i) ++spec_accepted_per_pos_[size_t(i)];
}

}  // namespace parley
