// The scheduler's counters and a snapshot of its queues and KV pool, for metrics and the admin view.
#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "engine/scheduler.hpp"

namespace parley {

SchedulerStats Scheduler::stats() const {
  SchedulerStats s;
  const BlockPool& pool = kv_.block_pool();
  // Requests the user sent: split children count once, with their parent (running if any child runs).
  if (num_with_parent_ == 0) {
    s.num_running = int(running_.size());  // no split children: one request per user request (sent every step)
    s.num_waiting = int(waiting_.size()) + num_waiting_for_remote_kv();
  } else {
    std::unordered_set<std::string_view> running_users, waiting_users;
    for (const Request* r : running_) running_users.insert(r->user_request_id());
    for (const Request* r : requests())
      if (r->status != RequestStatus::Running && !running_users.count(r->user_request_id()))
        waiting_users.insert(r->user_request_id());
    s.num_running = int(running_users.size());
    s.num_waiting = int(waiting_users.size());
  }
  s.kv_cache_usage = pool.get_usage();
  s.num_total_blocks = pool.num_usable_blocks();
  s.num_used_blocks = pool.num_used();
  s.num_free_blocks = pool.get_num_free_blocks();
  s.num_cached_blocks = pool.num_cached_blocks();
  s.prefix_cache_queries = kv_.prefix_cache_stats().queries;
  s.prefix_cache_hits = kv_.prefix_cache_stats().hits;
  s.num_preemptions = num_preemptions_;
  s.prefill_tokens_computed = prefill_tokens_computed_;
  s.num_steps = num_steps_;
  s.num_discarded_tokens = num_discarded_;
  s.spec_num_drafts = spec_num_drafts_;
  s.spec_num_draft_tokens = spec_num_draft_tokens_;
  s.spec_num_accepted_tokens = spec_num_accepted_;
  s.spec_num_accepted_per_pos = spec_accepted_per_pos_;
  s.spec_num_accepted_per_pos.resize(size_t(config_.num_speculative_tokens), 0);
  s.num_decode_steps = num_decode_steps_;
  s.num_uniform_decode_steps = num_uniform_decode_steps_;
  s.num_graph_replays = num_graph_replays_;
  s.num_eager_steps = num_eager_steps_;
  s.num_splits = num_splits_;
  s.num_pooled = num_pooled_, s.num_pooled_tokens = num_pooled_tokens_;
  s.num_step_failures = num_step_failures_;
  s.peak_used_blocks = peak_used_blocks_;
  s.num_waiting_for_remote_kv = num_waiting_for_remote_kv();
  s.num_held_for_transfer = num_held();
  return s;
}

}  // namespace parley
