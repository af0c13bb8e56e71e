// The KV transfer actor of a prefill instance: takes prompts from decode instances, pushes each handed-off
// request's KV to the instance that sent it (on the device link to it, if there is one), and frees the blocks
// when that instance acknowledges or the lease runs out (DecodeClients keeps the book).
#include <spdlog/spdlog.h>

#include "actors/kv_transfer_state.hpp"

namespace parley::kv_transfer {
namespace {

// A device link broke (or a send on it failed): this end closes, and the decode instances on it are told (their end
// closes too, and they open a new link later).
void link_broken(PrefillSelf self, const std::string& name) {
  self->send(self->state.worker, msg::link_close_atom::value, name);  // a no-op where the worker dropped it already
  for (const caf::actor& decode : self->state.clients->link_broken(name))
    if (auto to = caf::actor_cast<msg::decode_kv_actor>(decode)) self->send(to, msg::link_broken_atom::value, name);
}

// The payload leaves for the decode instance awaiting it (the KV's bytes, or the header of KV sent on the link),
// its blocks leased until acknowledged; nobody awaiting it any more frees them.
void send_payload(PrefillSelf self, const KvTransferPayload& p) {
  auto& st = self->state;
  const std::string bytes = encode_kv_transfer(p);
  const std::optional<caf::actor> to = st.clients->pushed(p.req_id, now_seconds());
  if (!to) return self->send(st.scheduler, msg::release_atom::value, p.req_id);
  self->send(caf::actor_cast<msg::decode_kv_actor>(*to), msg::kv_atom::value, bytes);
  ++st.stats.transfers, st.stats.blocks += p.num_blocks;
  st.stats.bytes += int64_t(bytes.size()) + (p.kv_link.empty() ? 0 : st.layout.bytes(p.num_blocks));
  report(self);
}

// A send on a device link that fails after its header left: the blocks are freed and the link is broken.
void sent_on_link(PrefillSelf self, const std::string& id, const std::string& link) {
  ask(self, self->state.worker, caf::infinite, msg::kv_sent_atom::value, id)
      .then([](bool) {},
            [self, id, link](const caf::error& err) {
              spdlog::warn("request {}: sending its KV on device link {} failed: {}", id, link,
                           self->system().render(err));
              self->send(self->state.scheduler, msg::release_atom::value, id);
              link_broken(self, link);
            });
}

// The request's KV cannot be read: its blocks are freed and its decode instance told (it prefills it itself).
void push_failed(PrefillSelf self, const std::string& id, const std::string& why) {
  auto& st = self->state;
  self->send(st.scheduler, msg::release_atom::value, id);
  if (const std::optional<caf::actor> to = st.clients->refused(id))
    self->send(caf::actor_cast<msg::decode_kv_actor>(*to), msg::kv_failed_atom::value, id, why);
}

// The worker starts the send: on the device link the payload names, else (no link, or no staging memory for it)
// inline as bytes, read after the step that wrote the blocks (that step's output reached the scheduler before it
// pushed). Headers leave in the order the sends were posted. A link that fails to take the KV breaks, and the KV
// goes inline instead: nothing is lost. A send that fails after its header left frees the blocks; the decode
// side's receive fails too, and it prefills the request itself.
void push(PrefillSelf self, KvTransferPayload p, std::vector<int> blocks) {
  const std::string link = p.kv_link;
  ask(self, self->state.worker, caf::infinite, msg::kv_send_atom::value, p.req_id, link, blocks)
      .then(
          [self, p, link](std::string& went_on, std::vector<uint8_t>& kv) mutable {
            if (went_on != link)
              spdlog::warn("request {}: no device memory to stage its KV for link {}; it goes over TCP", p.req_id,
                           link);
            p.kv_link = std::move(went_on), p.kv = std::move(kv);
            send_payload(self, p);
            if (!p.kv_link.empty()) sent_on_link(self, p.req_id, p.kv_link);
          },
          [self, p, blocks, link](const caf::error& err) mutable {
            if (link.empty())
              return push_failed(self, p.req_id, "reading its KV failed: " + self->system().render(err));
            spdlog::warn("request {}: device link {} did not take its KV ({}); it goes over TCP", p.req_id, link,
                         self->system().render(err));
            link_broken(self, link);
            p.kv_link.clear();
            push(self, std::move(p), std::move(blocks));
          });
}

// A message another instance may send: from a decode instance that authenticated (any without --kv-secret).
bool from_peer(PrefillSelf self, const char* what) {
  const auto& sender = self->current_sender();
  const auto& auth = self->state.auth;
  if (from_this_process(self) || (sender && (!auth.enabled() || auth.trusted(caf::to_string(sender->node())))))
    return true;
  refuse_sender(self, what, "it has not authenticated (--kv-secret)");
  return false;
}

// A prompt from a decode instance: prefilled here unless its sender may not send one (refused unread, so that it
// prefills locally at once) or its KV layout differs (refused before computing KV the decode side cannot take).
void take_prompt(PrefillSelf self, const std::string& json, const caf::actor& to) {
  auto refuse = [&](const std::string& id, const std::string& why) {
    self->send(caf::actor_cast<msg::decode_kv_actor>(to), msg::kv_failed_atom::value, id, why);
  };
  if (!from_peer(self, "prefill")) {
    const auto& sender = self->current_sender();
    if (sender && to && to.node() == sender->node()) try {
        refuse(decode_prefill_request(json, nullptr).request_id,
               "this prefill instance requires --kv-secret authentication");
      } catch (const std::exception&) {}
    return;
  }
  try {
    KvLayout theirs;
    Request r = decode_prefill_request(json, &theirs);
    if (std::string why = kv_layout_mismatch(self->state.layout, theirs); !why.empty()) {
      spdlog::warn("request {} refused: {}", r.request_id, why);
      return refuse(r.request_id, why);
    }
    self->state.clients->accept(r.request_id, to);
    self->send(self->state.scheduler, msg::prefill_atom::value, std::move(r));
  } catch (const std::exception& e) {
    spdlog::error("a decode instance sent a request this instance cannot read: {}", e.what());
  }
}

// A decode instance opens a device link to this one: this worker opens rank 0 of it, replacing an earlier one.
void open_link_to(PrefillSelf self, const std::string& id, const std::string& name, const caf::actor& decode) {
  auto& st = self->state;
  if (st.link_transport.empty())
    return spdlog::warn("a decode instance asked for a device link; this one has none (--kv-transport)");
  close_link(self, st.clients->forget_link(decode));
  ask(self, st.worker, caf::infinite, msg::link_open_atom::value, name, id, int32_t(0))
      .then(
          [self, name, decode](bool) {
            close_link(self, self->state.clients->link_up(decode, name));
            self->monitor(decode);  // a link to an instance that went away would idle, holding its communicator
            spdlog::info("device link {} is up ({})", name, self->state.link_transport);
          },
          [self, name](const caf::error& err) {
            spdlog::warn("device link {} failed ({}); KV to it goes over TCP", name, self->system().render(err));
          });
}

// Admin: the decode instances awaiting KV, the leases and the links.
KvTransferView view(const PrefillKvState& st) {
  KvTransferView v;
  v.link_transport = st.link_transport;
  v.links_to_decode = st.clients->num_links();
  v.awaiting_prefill = st.clients->num_awaiting();
  v.held_for_decode = st.clients->num_leased();
  return v;
}

// Once a tick: leases the decode side never acknowledged.
void tick(PrefillSelf self) {
  auto& st = self->state;
  for (const std::string& id : st.clients->expired(now_seconds())) {
    spdlog::warn("request {}: no acknowledgement of its KV within {} s; freeing its blocks", id, st.timeout_s);
    self->send(st.scheduler, msg::release_atom::value, id);
  }
  self->delayed_send(self, kTick, msg::tick_atom::value);
}

}  // namespace

msg::prefill_kv_actor::behavior_type prefill_behavior(PrefillSelf self, KvTransferSetup setup) {
  self->state.start(std::move(setup));
  self->state.clients = std::make_unique<DecodeClients<caf::actor>>(self->state.timeout_s);  // a lease: a timeout
  self->set_down_handler([self](caf::down_msg& dm) {  // a decode instance with a device link went: its link goes
    const std::string link =
        self->state.clients->forget_link_where([&](const caf::actor& decode) { return decode.address() == dm.source; });
    if (!link.empty()) spdlog::info("decode instance of device link {} went down; closing the link", link);
    close_link(self, link);
  });
  self->send(self, msg::tick_atom::value);
  return counted_behavior(
      self,
      [self](msg::auth_challenge_atom, const std::string& nonce) -> caf::result<std::string, std::string> {
        auto& st = self->state;
        const auto& sender = self->current_sender();
        if (!st.auth.enabled() || !sender) {
          spdlog::warn("a KV peer asked to authenticate; this instance has no --kv-secret");
          return {std::string(), std::string()};
        }
        KvPeerAuth::Answer a = st.auth.answer(caf::to_string(sender->node()), nonce);
        return {std::move(a.nonce), std::move(a.proof)};
      },
      [self](msg::auth_proof_atom, const std::string& proof) {
        auto& st = self->state;
        const auto& sender = self->current_sender();
        if (sender && st.auth.accept(caf::to_string(sender->node()), proof)) {
          spdlog::info("decode instance on node {} authenticated", caf::to_string(sender->node()));
          return true;
        }
        refuse_sender(self, "proof", "it does not prove the secret");
        return false;
      },
      [self](msg::prefill_atom, const std::string& json, const caf::actor& to) { take_prompt(self, json, to); },
      [self](msg::push_atom, KvTransferPayload& p, std::vector<int>& blocks) {
        auto& st = self->state;
        if (!local_only(self, "push")) return;
        const std::optional<caf::actor> to = st.clients->awaiting(p.req_id);
        if (!to) return self->send(st.scheduler, msg::release_atom::value, p.req_id);  // nobody awaits it now
        p.kv_link = st.clients->link_to(*to);  // the device link to that instance, as it is now ("": none)
        push(self, std::move(p), std::move(blocks));
      },
      [self](msg::link_broken_atom, const std::string& name) {  // from a decode instance: its end broke
        if (from_peer(self, "link closed")) link_broken(self, name);
      },
      [self](msg::link_open_atom, const std::string& id, const std::string& name, const caf::actor& decode) {
        if (from_peer(self, "link")) open_link_to(self, id, name, decode);
      },
      [self](msg::refuse_atom, const std::string& id, const std::string& why) {
        auto& st = self->state;
        if (!local_only(self, "refuse")) return;
        if (const std::optional<caf::actor> to = st.clients->refused(id))
          self->send(caf::actor_cast<msg::decode_kv_actor>(*to), msg::kv_failed_atom::value, id, why);
      },
      [self](msg::release_atom, const std::string& id) {  // acknowledged
        if (!from_peer(self, "release")) return;
        if (self->state.clients->acknowledged(id)) self->send(self->state.scheduler, msg::release_atom::value, id);
      },
      [self](msg::tick_atom) {
        if (local_only(self, "tick")) tick(self);
      },
      [self](msg::requests_atom) { return local_only(self, "admin") ? view(self->state) : KvTransferView{}; });
}

}  // namespace parley::kv_transfer
