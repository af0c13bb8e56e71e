// The scheduler after a lost step: the request at fault fails with the error, the rest are recomputed on a
// fresh batch (Scheduler::resync).
#include <string>
#include <vector>

#include "engine/scheduler.hpp"

namespace parley {

void Scheduler::fail_request(Request& r, const std::string& error, std::vector<EngineCoreOutput>& outputs) {
  for (const std::string& id : r.awaits_split() ? r.child_req_ids : std::vector<std::string>{r.request_id}) {
    EngineCoreOutput& o = outputs.emplace_back();
    o.req_id = id;
    o.finish_reason = FinishReason::Abort;
    o.num_cached_tokens = std::max(0, r.num_cached_tokens);
    o.error = error;
  }
  r.status = RequestStatus::FinishedAborted;
  free_request(r);
}

std::vector<EngineCoreOutput> Scheduler::resync(const std::string& culprit, const std::string& error) {
  ++num_step_failures_;
  std::vector<EngineCoreOutput> outputs;
  const std::vector<Request*> held(running_.rbegin(), running_.rend());  // newest first: requeued oldest first
  running_.clear();
  for (Request* r : held) {
    r->worker_knows = false;  // the reset drops it
    // A failure that names its request is that one's; any other counts against everyone in the batch.
    if (r->request_id == culprit || (culprit.empty() && ++r->num_lost_steps >= kMaxLostSteps)) {
      fail_request(*r, error, outputs);
      continue;
    }
    kv_.free(*r);
    requeue(*r);
  }
  kv_.block_pool().forget_cached_prefixes();
  if (auto it = requests_.find(culprit); it != requests_.end()) fail_request(*it->second, error, outputs);
  finished_req_ids_.clear();
  pending_block_copies_.clear();
  reset_batch_ = true;
  return outputs;
}

}  // namespace parley
