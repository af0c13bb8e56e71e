// The admin view of the scheduler's state as JSON (GET /admin/requests): plain logic, no CAF.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/scheduler.hpp"

namespace parley {

// {"requests": [{id, user_request, state, prompt_tokens, output_tokens, computed_tokens, placeholders, blocks, n,
//  preemptions}], "kv_blocks": {total, used, cached, free}, "num_splits": N,
//  "steps": {"async_scheduling", "in_flight": [step ids on the worker, oldest first], "worker_news_pending" (finished
//  requests the worker has not been told of yet), "total", "discarded_tokens"}}
std::string admin_requests_json(const Scheduler& scheduler, bool async_scheduling,
                                const std::vector<uint64_t>& steps_in_flight);

}  // namespace parley
