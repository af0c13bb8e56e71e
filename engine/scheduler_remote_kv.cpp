// The scheduler's side of prefill/decode disaggregation: a prefill instance hands requests off
// with their blocks held; a decode instance admits requests whose KV arrives from elsewhere.
#include <algorithm>
#include <stdexcept>

#include "engine/kv_connector_scheduler.hpp"
#include "engine/scheduler.hpp"

namespace parley {

EngineCoreOutput Scheduler::hand_off(Request& r, std::span<const int> tokens, std::vector<TokenLogprobs> logprobs) {
  EngineCoreOutput o;  // tokens: one per child of an n-sample request (checked by update_from_output)
  o.req_id = r.request_id;
  o.new_token_ids.assign(tokens.begin(), tokens.end());
  o.new_logprobs = std::move(logprobs);
  o.prompt_logprobs = std::move(r.prompt_logprobs);  // they travel with the first token(s)
  o.num_cached_tokens = std::max(0, r.num_cached_tokens);
  o.finish_reason = FinishReason::Length;  // done here: the decode instance applies every stop condition
  // free_request, except that the blocks stay with the id until release_held.
  mark_outputs_stale(r);
  std::erase(running_, &r);
  if (forget_worker_knows(r)) finished_req_ids_.push_back(r.request_id);
  connector().hold(r.request_id, r.num_prompt_tokens());
  count_live(r, -1);
  requests_.erase(r.request_id);  // destroys the request: last use
  return o;
}

KvConnectorScheduler& Scheduler::connector() const {
  if (!connector_) throw std::logic_error("a request that transfers KV needs a KV connector");
  return *connector_;
}

const std::vector<Request*>& Scheduler::waiting_for_remote_kv() const {
  static const std::vector<Request*> kNone;
  return connector_ ? connector_->waiting_for_kv() : kNone;
}

int Scheduler::num_held() const { return connector_ ? connector_->num_held() : 0; }

void Scheduler::release_held(const std::string& req_id) {
  if (connector_ && connector_->release(req_id))
    kv_.free(req_id);  // else released already (acknowledged, then
                       // its lease ran out)
}

bool Scheduler::admit_remote(Request& r) {
  KvConnectorScheduler& remote = connector();
  // The KV arrives later: its full blocks join the prefix cache only once it is there.
  if (!kv_.allocate_slots(r, r.num_prompt_tokens(), {}, false)) return false;
  // Its first step computes the token after the prompt: what that query cannot see need not arrive (the
  // table names the null block there, into which the sender's bytes for it go).
  kv_.remove_skipped_blocks(r, r.num_prompt_tokens());
  waiting_.pop_front();
  kv_.take_new_block_ids(r);
  r.status = RequestStatus::WaitingForRemoteKv;
  remote.update_state_after_alloc(r);
  return true;
}

std::vector<EngineCoreOutput> Scheduler::finish_remote_kv(const std::string& req_id,
                                                          const std::vector<int>& first_tokens,
                                                          const std::vector<TokenLogprobs>& logprobs,
                                                          const std::vector<TokenLogprobs>& prompt_logprobs) {
  auto it = requests_.find(req_id);
  if (it == requests_.end()) return {};
  Request& r = *it->second;
  if (r.status != RequestStatus::WaitingForRemoteKv)
    throw std::logic_error("request " + req_id + " awaits no remote KV");
  const size_t expected = r.awaits_split() ? r.child_req_ids.size() : 1;
  if (first_tokens.size() != expected)
    throw std::invalid_argument("request " + req_id + " arrived with " + std::to_string(first_tokens.size()) +
                                " first tokens, it needs " + std::to_string(expected));
  connector_->stop_waiting(r);
  r.kv_transfer = KvTransfer::None;  // from here on an ordinary request: a preemption recomputes it here
  r.num_computed_tokens = r.num_prompt_tokens();
  r.num_cached_tokens = 0;
  kv_.allocate_slots(r, 0);  // no new block: its full prompt blocks join the prefix cache now
  r.status = RequestStatus::Running;
  running_.push_back(&r);               // the worker meets it in the next step, with its blocks (as a split child)
  r.prompt_logprobs = prompt_logprobs;  // scored by the prefill instance
  std::vector<EngineCoreOutput> outputs;
  if (r.awaits_split())
    split(r, first_tokens, logprobs, outputs);
  else
    outputs.push_back(after_tokens(r, first_tokens, logprobs));
  return outputs;
}

std::vector<std::string> Scheduler::fail_remote_kv(const std::string& req_id, bool recompute) {
  auto it = requests_.find(req_id);
  if (it == requests_.end() || it->second->status != RequestStatus::WaitingForRemoteKv) return {};
  Request& r = *it->second;
  if (!recompute) return finish_requests({req_id}, RequestStatus::FinishedAborted);
  connector_->stop_waiting(r);
  kv_.free(r);
  r.kv_transfer = KvTransfer::None;
  r.status = RequestStatus::Waiting;
  waiting_.push_front(&r);
  return {};
}

}  // namespace parley
