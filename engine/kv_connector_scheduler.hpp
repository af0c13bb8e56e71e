// The scheduler's half of prefill/decode disaggregation (vLLM's KV connector, scheduler side; the worker's half is
// kv_connector_worker.hpp), over the Scheduler: which requests wait for KV and go to a prefill instance, which hold
// blocks for a transfer, where arrived KV lands and whether it fits, what a failed transfer becomes, and which
// outputs are hand-offs whose KV leaves with them. The Scheduler keeps none of this: it calls the hooks below. It
// decides; the actors (or a test's hand) move the bytes, on whichever link or socket they choose: no peers,
// leases or links here.
#pragma once
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/kv_transfer.hpp"
#include "engine/scheduler.hpp"

namespace parley {

class KvConnectorScheduler {
 public:
  // layout: this instance's KV layout (transfers in and out use it). recompute_on_failure: a decode request whose
  // transfer failed is prefilled here (--kv-load-failure-policy recompute), else it fails.
  // Attaches itself to the scheduler (which calls its hooks) until destroyed.
  KvConnectorScheduler(Scheduler& scheduler, KvLayout layout, bool recompute_on_failure);
  ~KvConnectorScheduler() { scheduler_.attach_kv_connector(nullptr); }
  KvConnectorScheduler(const KvConnectorScheduler&) = delete;
  KvConnectorScheduler& operator=(const KvConnectorScheduler&) = delete;

  // --- The Scheduler's hooks (vLLM's update_state_after_alloc and request_finished) ---
  // Decode side: the request holds blocks for its KV now: it waits for it, and take_routes routes it.
  void update_state_after_alloc(Request& request);
  // Decode side: the request waits no more (its KV arrived, its transfer failed, or it finished).
  void stop_waiting(const Request& request) { std::erase(waiting_for_kv_, &request); }
  // Prefill side: the handed-off request finished, its prompt's blocks held for the transfer until released.
  void hold(const std::string& req_id, int num_prompt_tokens) { held_.emplace(req_id, num_prompt_tokens); }
  bool holds(const std::string& req_id) const { return held_.count(req_id) > 0; }
  // True when the request's blocks were held (the scheduler frees them now).
  bool release(const std::string& req_id) { return held_.erase(req_id) > 0; }
  const std::vector<Request*>& waiting_for_kv() const { return waiting_for_kv_; }  // in admission order
  int num_held() const { return int(held_.size()); }
  // A held request's prompt blocks in every group (flatten_block_ids' order; not the lookahead's).
  std::vector<int> held_block_ids(const std::string& req_id) const;

  // --- Decode side ---
  // A request that now holds blocks for its KV, to send to a prefill instance (encode_prefill_request).
  struct Route {
    std::string req_id, prefill_request;
  };
  std::vector<Route> take_routes();
  // Where a transfer's KV goes: the request's blocks, or none (it no longer waits, or the KV does not fit: why).
  struct Landing {
    std::vector<int> blocks;
    std::string misfit;  // non-empty: fail the transfer with this
  };
  Landing landing(const KvTransferPayload& payload) const;
  // The KV is in the blocks: the request runs, with its first tokens as outputs ({} if it no longer waits).
  std::vector<EngineCoreOutput> loaded(const KvTransferPayload& payload);
  // The transfer failed: the request is queued to prefill here, or it fails (the requests ended, and why).
  struct Failed {
    std::vector<std::string> req_ids;
    std::string message;
  };
  std::optional<Failed> failed(const std::string& req_id, const std::string& why);
  // The request waits for KV that has not arrived yet.
  bool waits_for_kv(const std::string& req_id) const;

  // --- Prefill side ---
  // A request routed here by a decode instance. Returns why it cannot run here, or nullopt.
  std::optional<std::string> admit(Request request, double now);
  // A handed-off request: its first token(s) and its prompt's held blocks; or, when first.error is set, a request
  // the engine failed here (no blocks held), whose decode instance must hear why.
  struct HandOff {
    EngineCoreOutput first;
    int num_prompt_tokens = 0;
    std::vector<int> blocks;
  };
  // Takes the hand-offs out of a step's outputs (their tokens travel with the KV, not to this instance's clients).
  std::vector<HandOff> take_hand_offs(std::vector<EngineCoreOutput>& outputs);
  // A hand-off's payload: first tokens, prompt length, layout and block count; its KV is read by whoever moves
  // it (as bytes into `kv`, or on a device link it then names).
  KvTransferPayload payload(const HandOff& hand_off) const;

 private:
  Scheduler& scheduler_;
  KvLayout layout_;
  bool recompute_on_failure_;
  std::unordered_map<std::string, int> handing_off_;  // prefill side: admitted, not handed off yet (prompt tokens)
  std::unordered_map<std::string, int> held_;         // prefill side: handed off (prompt tokens), blocks held
  std::vector<Request*> waiting_for_kv_;              // decode side: WaitingForRemoteKv
  std::vector<std::string> to_route_;                 // decode side: waiting since the last take_routes
};

}  // namespace parley
