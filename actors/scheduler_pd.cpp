// The scheduler actor's side of prefill/decode disaggregation: the messages that move prompts out and KV in
// on a decode instance, and hand requests off on a prefill instance. What to do is KvConnectorScheduler's
// (engine/kv_connector_scheduler.hpp); how the KV travels (TCP or a device link) is the KV transfer actor's
// and the worker's: this file only sends, and asks the worker to land what arrived.
#include <spdlog/spdlog.h>

#include "actors/scheduler_state.hpp"

namespace parley::scheduling {

// Decode side: requests just given blocks for their KV go to a prefill instance (the KV transfer actor routes).
void route_remote_prefills(Self self) {
  auto& st = self->state;
  for (KvConnectorScheduler::Route& route : st.connector->take_routes())
    self->send(st.decode_kv, msg::route_atom::value, std::move(route.req_id), std::move(route.prefill_request));
}

// Prefill side: the handed-off request's payload and held blocks go to the KV transfer actor, which has the
// worker read the KV (or send it on the device link to the decode instance, if there is one) and pushes it;
// its blocks stay held until the decode side releases them (or a failure does).
void hand_off_kv(Self self, KvConnectorScheduler::HandOff handed) {
  auto& st = self->state;
  if (!handed.first.error.empty())  // the engine failed it here: the decode instance's policy decides what follows
    return self->send(st.prefill_kv, msg::refuse_atom::value, handed.first.req_id, std::move(handed.first.error));
  self->send(st.prefill_kv, msg::push_atom::value, st.connector->payload(handed), std::move(handed.blocks));
}

// Prefill side: a request routed here by a decode instance.
void admit_for_decode(Self self, Request& r) {
  auto& st = self->state;
  const std::string id = r.request_id;
  if (auto refusal = st.connector->admit(std::move(r), now_seconds()))
    return self->send(st.prefill_kv, msg::refuse_atom::value, id, std::move(*refusal));
  report_counters(self);
  maybe_step(self);
}

// Decode side: a request's transfer failed; by --kv-load-failure-policy it is prefilled here or fails.
void kv_failure(Self self, const std::string& id, const std::string& why) {
  auto& st = self->state;
  auto failed = st.connector->failed(id, why);
  if (!failed) return;
  if (!failed->req_ids.empty())
    self->send(st.output, msg::aborted_atom::value, std::move(failed->req_ids), st.scheduler().stats(),
               std::move(failed->message));
  maybe_step(self);
}

namespace {

// Decode side: the KV is in the request's blocks (the worker wrote it before any later step): it runs.
void kv_loaded(Self self, const KvTransferPayload& p) {
  auto outputs = self->state.connector->loaded(p);
  if (!outputs.empty()) send_outputs(self, std::move(outputs));
  report_counters(self);
  maybe_step(self);
}

}  // namespace

// Decode side: the request's KV is received on the worker (inline or on a device link): it lands in the request's
// blocks if the request still waits for it and it fits, else it is dropped.
void kv_received(Self self, const KvTransferPayload& p) {
  auto& st = self->state;
  KvConnectorScheduler::Landing landing = st.connector->landing(p);
  if (!landing.misfit.empty()) kv_failure(self, p.req_id, landing.misfit);
  if (landing.blocks.empty()) return self->send(st.worker, msg::kv_drop_atom::value, p.req_id);
  ask(self, st.worker, caf::infinite, msg::kv_land_atom::value, p.req_id, std::move(landing.blocks))
      .then([self, p](bool) { kv_loaded(self, p); },
            [self, id = p.req_id](const caf::error& err) {
              kv_failure(self, id, "loading it failed: " + self->system().render(err));
            });
}

}  // namespace parley::scheduling
