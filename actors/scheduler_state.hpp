// The scheduler actor's state and the functions its two files share (scheduler_actor.cpp: admission, steps
// and outputs; scheduler_pd.cpp: prefill/decode disaggregation). Included by those two files only.
#pragma once
#include <string>
#include <unordered_map>

#include "actors/actors.hpp"
#include "engine/kv_connector_scheduler.hpp"
#include "engine/step_pipeline.hpp"

namespace parley::scheduling {

struct SchedulerState {
  SchedulerState() = default;              // not an aggregate: CAF would try to build the state from the actor pointer
  std::unique_ptr<StepPipeline> pipeline;  // the scheduler and the steps on the worker: all the policy
  Scheduler& scheduler() { return pipeline->scheduler(); }
  msg::worker_actor worker;
  msg::output_actor output;
  uint64_t handled = 0;
  uint64_t outputs_sent = 0;  // outputs messages to the output actor (the profile's hop stamps)
  // PD roles.
  bool remote_prefill = false;                      // decode role: admitted requests are prefilled by prefill instances
  std::unique_ptr<KvConnectorScheduler> connector;  // all of PD's policy: routes, hand-offs, landings, failures
  msg::prefill_kv_actor prefill_kv;                 // prefill role: hand-offs are pushed through it
  msg::decode_kv_actor decode_kv;                   // decode role: prompts are routed through it
};
using Self = msg::scheduler_actor::stateful_pointer<SchedulerState>;

// Sends steps to the worker while fewer than the limit are in flight and there is work (or news) for it.
void maybe_step(Self self);
// Outputs of a step (or of an arrival) to the output actor, and the requests they finished.
void send_outputs(Self self, std::vector<EngineCoreOutput> outputs);
// The scheduler's counters to the output actor, after a change that no step's outputs carry.
void report_counters(Self self);

// Prefill/decode disaggregation (scheduler_pd.cpp).
// Decode side: requests just given blocks for their KV go to a prefill instance (the KV transfer actor routes).
void route_remote_prefills(Self self);
// Prefill side: a handed-off request's KV goes to its decode instance (as bytes, or on a device link).
void hand_off_kv(Self self, KvConnectorScheduler::HandOff handed);
// Prefill side: a request routed here by a decode instance.
void admit_for_decode(Self self, Request& r);
// Decode side: a request's KV is received on the worker (inline or on a device link): land it, or drop it.
void kv_received(Self self, const KvTransferPayload& p);
// Decode side: a request's transfer failed; by --kv-load-failure-policy it is prefilled here or fails.
void kv_failure(Self self, const std::string& id, const std::string& why);

}  // namespace parley::scheduling
