// The scheduler actor's side of prefill/decode disaggregation: routing prompts out and KV in on
// a decode instance, handing requests off on a prefill instance, over TCP or a device link.
#include <spdlog/spdlog.h>

#include "actors/scheduler_state.hpp"

namespace parley::scheduling {

// Decode side: requests just given blocks for their KV go to a prefill instance (the KV transfer actor routes).
void route_remote_prefills(Self self) {
  auto& st = self->state;
  for (Scheduler::KvReceive& k : st.scheduler().take_kv_receives())
    if (const Request* r = st.scheduler().find(k.req_id))
      self->send(st.kv, msg::route_atom::value, k.req_id, encode_prefill_request(*r, st.pd.layout));
}

namespace {

// Prefill side: reads the blocks on the worker (after the step that wrote them) and gives the KV transfer
// actor the payload to push; the blocks stay held until the decode side releases them.
void push_over_tcp(Self self, const EngineCoreOutput& handed, int num_prompt_tokens, const std::vector<int>& blocks) {
  auto& st = self->state;
  ask(self, st.worker, caf::infinite, msg::export_atom::value, blocks)
      .then(
          [self, handed, num_prompt_tokens, n = int(blocks.size())](std::vector<uint8_t>& kv) {
            KvTransferPayload p{handed.req_id,
                                num_prompt_tokens,
                                handed.new_token_ids,
                                handed.new_logprobs,
                                self->state.pd.layout,
                                n,
                                "",
                                std::move(kv),
                                handed.prompt_logprobs};
            self->send(self->state.kv, msg::push_atom::value, handed.req_id, encode_kv_transfer(p), int32_t(n), false);
          },
          [self, id = handed.req_id](const caf::error& err) {
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
void push_on_link(Self self, const EngineCoreOutput& handed, int num_prompt_tokens, const std::vector<int>& blocks,
                  const std::string& link) {
  auto& st = self->state;
  ask(self, st.worker, caf::infinite, msg::kv_send_atom::value, link, blocks)
      .then(
          [self, handed, num_prompt_tokens, blocks, link](uint64_t tag) {
            auto& st = self->state;
            if (tag == 0) {
              spdlog::warn("request {}: no device memory to stage its KV for link {}; it goes over TCP", handed.req_id,
                           link);
              return push_over_tcp(self, handed, num_prompt_tokens, blocks);
            }
            const KvTransferPayload header{handed.req_id,
                                           num_prompt_tokens,
                                           handed.new_token_ids,
                                           handed.new_logprobs,
                                           st.pd.layout,
                                           int(blocks.size()),
                                           link,
                                           {},
                                           handed.prompt_logprobs};
            self->send(st.kv, msg::push_atom::value, handed.req_id, encode_kv_transfer(header), int32_t(blocks.size()),
                       true);
            ask(self, st.worker, caf::infinite, msg::kv_sent_atom::value, tag)
                .then([](bool) {},
                      [self, id = handed.req_id, link](const caf::error& err) {
                        link_send_failed(self, id, link, self->system().render(err));
                      });
          },
          [self, handed, num_prompt_tokens, blocks, link](const caf::error& err) {
            spdlog::warn("request {}: device link {} did not take its KV ({}); it goes over TCP", handed.req_id, link,
                         self->system().render(err));
            self->send(self->state.kv, msg::link_broken_atom::value, link);
            push_over_tcp(self, handed, num_prompt_tokens, blocks);
          });
}

}  // namespace

// Prefill side: the handed-off request's KV goes to the decode instance, on its device link if it has one.
void hand_off_kv(Self self, const EngineCoreOutput& handed) {
  auto& st = self->state;
  const SchedulerState::HandOff to = st.handing_off.at(handed.req_id);
  st.handing_off.erase(handed.req_id);
  const std::vector<int> blocks = st.scheduler().held_block_ids(handed.req_id);
  if (to.link.empty())
    push_over_tcp(self, handed, to.num_prompt_tokens, blocks);
  else
    push_on_link(self, handed, to.num_prompt_tokens, blocks, to.link);
}

// Prefill side: a request routed here by a decode instance.
void admit_for_decode(Self self, Request& r, const std::string& link) {
  auto& st = self->state;
  r.kv_transfer = KvTransfer::ToDecode;
  r.arrival_time = now_seconds();
  const std::string id = r.request_id;
  const int prompt = r.num_prompt_tokens();
  try {
    st.scheduler().add_request(std::move(r));
  } catch (const std::exception& e) {
    self->send(st.kv, msg::refuse_atom::value, id, std::string(e.what()));
    return;
  }
  st.handing_off[id] = {prompt, link};
  report_counters(self);
  maybe_step(self);
}

// Decode side: a request's transfer failed; by --kv-load-failure-policy it is prefilled here or fails.
void kv_failure(Self self, const std::string& id, const std::string& why) {
  auto& st = self->state;
  const Request* r = st.scheduler().find(id);
  if (!r || r->status != RequestStatus::WaitingForRemoteKv) return;  // finished, aborted or arrived meanwhile
  spdlog::warn("request {}: KV transfer failed ({}); {}", id, why,
               st.pd.recompute_on_kv_failure ? "prefilling it here" : "failing it");
  auto live = st.scheduler().fail_remote_kv(id, st.pd.recompute_on_kv_failure);
  if (!live.empty())
    self->send(st.output, msg::aborted_atom::value, std::move(live), st.scheduler().stats(),
               "The prefill instance failed this request (" + why + ") and --kv-load-failure-policy is fail.");
  maybe_step(self);
}

namespace {

// Decode side: why a transfer's KV does not fit the request's blocks (another model, block size or KV dtype, another
// prompt), or "" when it fits.
std::string kv_misfit(Self self, const KvTransferPayload& p, const Request& r, const std::vector<int>& blocks) {
  if (std::string why = kv_layout_mismatch(p.layout, self->state.pd.layout); !why.empty()) return why;
  if (p.num_blocks != int(blocks.size()) || p.num_prompt_tokens != r.num_prompt_tokens())
    return "the KV does not fit this instance (another model or block size)";
  return "";
}

// Decode side: the KV is in the request's blocks (the worker wrote it before any later step): it runs.
void kv_loaded(Self self, const KvTransferPayload& p) {
  auto& st = self->state;
  const Request* now = st.scheduler().find(p.req_id);
  if (!now || now->status != RequestStatus::WaitingForRemoteKv) return;
  auto outputs = st.scheduler().finish_remote_kv(p.req_id, p.first_token_ids, p.first_logprobs, p.prompt_logprobs);
  if (!outputs.empty()) send_outputs(self, std::move(outputs));
  report_counters(self);
  maybe_step(self);
}

// Decode side: the KV arrived; it is written on the worker before any later step, then the request runs.
void kv_arrived(Self self, KvTransferPayload& p) {
  auto& st = self->state;
  const Request* r = st.scheduler().find(p.req_id);
  if (!r || r->status != RequestStatus::WaitingForRemoteKv) return;  // aborted, or failed over to a local prefill
  std::vector<int> blocks = flatten_block_ids(st.scheduler().kv_cache_manager().block_ids(p.req_id));
  if (std::string why = kv_misfit(self, p, *r, blocks); !why.empty()) return kv_failure(self, p.req_id, why);
  ask(self, st.worker, caf::infinite, msg::import_atom::value, std::move(blocks), std::move(p.kv))
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
  const Request* r = st.scheduler().find(p.req_id);
  std::vector<int> blocks;
  if (r && r->status == RequestStatus::WaitingForRemoteKv) {
    blocks = flatten_block_ids(st.scheduler().kv_cache_manager().block_ids(p.req_id));
    if (std::string why = kv_misfit(self, p, *r, blocks); !why.empty()) {
      blocks.clear();
      kv_failure(self, p.req_id, why);
    }
  }
  const int64_t words = p.layout.bytes(p.num_blocks) / 4;  // the link's unit (KvStaging)
  ask(self, st.worker, caf::infinite, msg::kv_recv_atom::value, p.kv_link, words)
      .then(
          [self, p, blocks](uint64_t tag) {
            auto& st = self->state;
            self->send(st.kv, msg::kv_received_atom::value, p.req_id, true);
            const Request* now = st.scheduler().find(p.req_id);
            if (blocks.empty() || !now || now->status != RequestStatus::WaitingForRemoteKv)
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
