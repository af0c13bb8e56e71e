#include "actors/admin_view.hpp"

#include <nlohmann/json.hpp>

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

std::string admin_requests_json(const Scheduler& scheduler, bool async_scheduling,
                                const std::vector<uint64_t>& steps_in_flight) {
  nlohmann::json requests = nlohmann::json::array();
  const KVCacheManager& kv = scheduler.kv_cache_manager();
  auto held = [&](const std::string& id) {  // every block it references, the null block left out
    std::vector<int> ids;
    for (int b : flatten_block_ids(kv.block_ids(id)))
      if (!kv.block_pool().null_block() || b != kv.block_pool().null_block()->block_id) ids.push_back(b);
    return ids;
  };
  for (const Request* r : scheduler.requests())
    requests.push_back({{"id", r->request_id},
                        {"user_request", r->user_request_id()},
                        {"state", state_name(r->status)},
                        {"prompt_tokens", r->num_prompt_tokens()},
                        {"output_tokens", r->num_output_tokens()},
                        {"computed_tokens", r->num_computed_tokens},
                        {"placeholders", r->num_output_placeholders},
                        {"blocks", held(r->request_id)},
                        {"block_tables", kv.block_ids(r->request_id)},  // per KV group
                        {"n", r->awaits_split() ? int(r->child_req_ids.size()) : 1},
                        {"preemptions", r->num_preemptions}});
  const SchedulerStats s = scheduler.stats();
  return nlohmann::json{{"requests", requests},
                        {"kv_blocks",
                         {{"total", s.num_total_blocks},
                          {"used", s.num_used_blocks},
                          {"cached", s.num_cached_blocks},
                          {"free", s.num_free_blocks},
                          {"states", block_states(kv.block_pool())}}},
                        {"num_splits", s.num_splits},
                        {"steps",
                         {{"async_scheduling", async_scheduling},
                          {"in_flight", steps_in_flight},
                          {"worker_news_pending", scheduler.has_pending_finished()},
                          {"total", s.num_steps},
                          {"discarded_tokens", s.num_discarded_tokens}}}}
      .dump();
}

}  // namespace parley
