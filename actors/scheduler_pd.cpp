// The scheduler actor's side of prefill/decode disaggregation: the messages that move prompts out and KV in
// on a decode instance, and hand requests off on a prefill instance, over TCP or a device link. What to do
// is KvConnectorScheduler's (engine/kv_connector_scheduler.hpp); this file only sends and asks.
#include <spdlog/spdlog.h>

#include "actors/scheduler_state.hpp"

namespace parley::scheduling {

// Decode side: requests just given blocks for their KV go to a prefill instance (the KV transfer actor routes).
void route_remote_prefills(Self self) {
  auto& st = self->state;
  for (KvConnectorScheduler::Route& route : st.connector->take_routes())
    self->send(st.kv, msg::route_atom::value, std::move(route.req_id), std::move(route.prefill_request));
}

namespace {

// Prefill side: reads the blocks on the worker (after the step that wrote them) and gives the KV transfer
// actor the payload to push; the blocks stay held until the decode side releases them.
void push_over_tcp(Self self, KvConnectorScheduler::HandOff handed) {
  auto& st = self->state;
  const std::vector<int> blocks = handed.blocks;
  ask(self, st.worker, caf::infinite, msg::export_atom::value, blocks)
      .then(
          [self, handed](std::vector<uint8_t>& kv) {
            const KvTransferPayload p = self->state.connector->payload(handed, std::move(kv), false);
            self->send(self->state.kv, msg::push_atom::value, p.req_id, encode_kv_transfer(p), int32_t(p.num_blocks),
                       false);
          },
          [self, id = handed.first.req_id](const caf::error& err) {
            self->state.scheduler().release_held(id);
            self->send(self->state.kv, msg::refuse_atom::value, id,
                       "reading its KV failed: " + self->system().render(err));
          });
}

// Prefill side, a send on the device link failed after its header left: the decode side's receive fails too
// (and recomputes); the blocks are free now, and the link is closed at both ends.
void link_send_failed(Self self, const std::string& id, const std::string& link, const std::string& why) {
  auto& st = self->state;
  spdlog::warn("request {}: sending its KV on device link {} failed: {}", id, link, why);
  st.scheduler().release_held(id);
  self->send(st.kv, msg::link_broken_atom::value, link);
  report_counters(self);
  maybe_step(self);  // the blocks may admit a waiting request
}

// Prefill side: the worker posts the send (after the step that wrote the blocks), then the header goes to the
// KV transfer actor: headers leave in the order the sends were posted, and only for sends that were. KV the
// link cannot take (no staging memory, or the link is gone) goes over TCP instead: nothing is lost.
void push_on_link(Self self, KvConnectorScheduler::HandOff handed) {
  auto& st = self->state;
  const std::vector<int> blocks = handed.blocks;
  const std::string link = handed.link;
  ask(self, st.worker, caf::infinite, msg::kv_send_atom::value, link, blocks)
      .then(
          [self, handed](uint64_t tag) {
            auto& st = self->state;
            if (tag == 0) {
              spdlog::warn("request {}: no device memory to stage its KV for link {}; it goes over TCP",
                           handed.first.req_id, handed.link);
              return push_over_tcp(self, handed);
            }
            const KvTransferPayload header = st.connector->payload(handed, {}, true);
            self->send(st.kv, msg::push_atom::value, header.req_id, encode_kv_transfer(header),
                       int32_t(header.num_blocks), true);
            ask(self, st.worker, caf::infinite, msg::kv_sent_atom::value, tag)
                .then([](bool) {},
                      [self, id = handed.first.req_id, link = handed.link](const caf::error& err) {
                        link_send_failed(self, id, link, self->system().render(err));
                      });
          },
          [self, handed](const caf::error& err) {
            spdlog::warn("request {}: device link {} did not take its KV ({}); it goes over TCP", handed.first.req_id,
                         handed.link, self->system().render(err));
            self->send(self->state.kv, msg::link_broken_atom::value, handed.link);
            push_over_tcp(self, handed);
          });
}

}  // namespace

// Prefill side: the handed-off request's KV goes to the decode instance, on its device link if it has one.
void hand_off_kv(Self self, KvConnectorScheduler::HandOff handed) {
  if (handed.link.empty())
    push_over_tcp(self, std::move(handed));
  else
    push_on_link(self, std::move(handed));
}

// Prefill side: a request routed here by a decode instance.
void admit_for_decode(Self self, Request& r, const std::string& link) {
  auto& st = self->state;
  const std::string id = r.request_id;
  if (auto refusal = st.connector->admit(std::move(r), link, now_seconds()))
    return self->send(st.kv, msg::refuse_atom::value, id, std::move(*refusal));
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

// Decode side: the KV arrived; it is written on the worker before any later step, then the request runs.
void kv_arrived(Self self, KvTransferPayload& p) {
  auto& st = self->state;
  KvConnectorScheduler::Landing landing = st.connector->landing(p);
  if (!landing.misfit.empty()) return kv_failure(self, p.req_id, landing.misfit);
  if (landing.blocks.empty()) return;  // aborted, or failed over to a local prefill
  ask(self, st.worker, caf::infinite, msg::import_atom::value, std::move(landing.blocks), std::move(p.kv))
      .then([self, p](bool) { kv_loaded(self, p); },
            [self, id = p.req_id](const caf::error& err) {
              kv_failure(self, id, "loading it failed: " + self->system().render(err));
            });
}

// Decode side: a header whose KV follows on the device link it names. The receive is posted whatever became
// of the request, since the link pairs it with the prefill side's send; the data lands in the blocks only if
// the request still waits for it when it is in. A link closed or broken meanwhile fails it (recompute).
void kv_on_link(Self self, KvTransferPayload p) {
  auto& st = self->state;
  KvConnectorScheduler::Landing landing = st.connector->landing(p);
  if (!landing.misfit.empty()) kv_failure(self, p.req_id, landing.misfit);
  const int64_t words = p.layout.bytes(p.num_blocks) / 4;  // the link's unit (KvStaging)
  ask(self, st.worker, caf::infinite, msg::kv_recv_atom::value, p.kv_link, words)
      .then(
          [self, p, blocks = std::move(landing.blocks)](uint64_t tag) {
            auto& st = self->state;
            self->send(st.kv, msg::kv_received_atom::value, p.req_id, true);
            if (blocks.empty() || !st.connector->waits_for_kv(p.req_id))
              return self->send(st.worker, msg::kv_drop_atom::value, tag);
            ask(self, st.worker, caf::infinite, msg::kv_land_atom::value, tag, blocks)
                .then([self, p](bool) { kv_loaded(self, p); },
                      [self, id = p.req_id](const caf::error& err) {
                        kv_failure(self, id, "loading it failed: " + self->system().render(err));
                      });
          },
          [self, id = p.req_id, link = p.kv_link](const caf::error& err) {
            self->send(self->state.kv, msg::kv_received_atom::value, id, false);
            self->send(self->state.kv, msg::link_broken_atom::value, link);
            kv_failure(self, id, "receiving it on the device link failed: " + self->system().render(err));
          });
}

}  // namespace

void kv_received(Self self, KvTransferPayload& p) {
  if (p.kv_link.empty())
    kv_arrived(self, p);
  else
    kv_on_link(self, std::move(p));
}

}  // namespace parley::scheduling
