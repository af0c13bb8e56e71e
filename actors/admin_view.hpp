// The admin view of the scheduler's state as JSON (GET /admin/requests): plain logic, no CAF.
#pragma once
#include <string>

#include "engine/scheduler.hpp"

namespace parley {

// {"requests": [{id, user_request, state, prompt_tokens, output_tokens, computed_tokens, blocks, n}],
//  "kv_blocks": {total, used, cached, free}, "num_splits": N}
std::string admin_requests_json(const Scheduler& scheduler);

}  // namespace parley
