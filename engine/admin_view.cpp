#include "engine/admin_view.hpp"

#include "engine/scheduler.hpp"

namespace parley {
namespace {

const char* state_name(RequestStatus s) {
  switch (s) {
    case RequestStatus::Waiting:
      return "waiting";
    case RequestStatus::Running:
      return "running";
    case RequestStatus::Preempted:
      return "preempted";
    case RequestStatus::WaitingForRemoteKv:
      return "waiting_for_remote_kv";
    default:
      return finish_reason_name(finish_reason_of(s));
  }
}

// One character per block id: 'u' referenced, 'c' free but holding a cached prefix, 'f' free, 'n' the null block.
std::string block_states(const BlockPool& pool) {
  std::string s(size_t(pool.num_blocks()), 'f');
  for (int id = 0; id < pool.num_blocks(); ++id) {
    const KVCacheBlock& b = pool.block(id);
    if (pool.null_block() && id == pool.null_block()->block_id)
      s[size_t(id)] = 'n';
    else if (b.ref_cnt > 0)
      s[size_t(id)] = 'u';
    else if (b.block_hash)
      s[size_t(id)] = 'c';
  }
  return s;
}

}  // namespace

EngineView admin_view(const Scheduler& scheduler, bool async_scheduling, const std::vector<uint64_t>& steps_in_flight) {
  EngineView view;
  const KVCacheManager& kv = scheduler.kv_cache_manager();
  const KVCacheBlock* null_block = kv.block_pool().null_block();
  for (const Request* r : scheduler.requests()) {
    RequestView& row = view.requests.emplace_back();
    row.id = r->request_id, row.user_request = r->user_request_id(), row.state = state_name(r->status);
    row.prompt_tokens = r->num_prompt_tokens(), row.output_tokens = r->num_output_tokens();
    row.computed_tokens = r->num_computed_tokens, row.placeholders = r->num_output_placeholders;
    row.block_tables = kv.block_ids(r->request_id);
    for (int b : flatten_block_ids(row.block_tables))
      if (!null_block || b != null_block->block_id) row.blocks.push_back(b);
    row.n = r->awaits_split() ? int(r->child_req_ids.size()) : 1;
    row.preemptions = r->num_preemptions;
    row.pooling = r->is_pooling();
  }
  const SchedulerStats s = scheduler.stats();
  view.kv_blocks = {s.num_total_blocks, s.num_used_blocks, s.num_cached_blocks, s.num_free_blocks,
                    block_states(kv.block_pool())};
  view.num_splits = s.num_splits;
  view.pooled_requests = s.num_pooled, view.pooled_tokens = s.num_pooled_tokens;
  view.steps = {async_scheduling, steps_in_flight, scheduler.has_pending_finished(), s.num_steps,
                s.num_discarded_tokens};
  return view;
}

}  // namespace parley
