// The KV transfer actor of a decode instance: routes prompts to prefill instances (the PrefillRouter
// decides), receives their KV and first tokens, turns deadlines and dead peers into failures, connects (and
// with --kv-secret authenticates) to each prefill instance, and with a device link transport opens a link to
// each one it reaches (each peer's PeerLink keeps its state): their KV then comes on it.
#include <spdlog/spdlog.h>

#include <caf/io/all.hpp>

#include <cstdio>
#include <functional>

#include "actors/kv_transfer_state.hpp"

namespace parley::kv_transfer {
namespace {

void fail(DecodeSelf self, const std::string& id, const std::string& why) {
  self->state.routed_at.erase(id);  // a timed-out or lost transfer takes its start time with it
  ++self->state.stats.failures;
  self->send(self->state.scheduler, msg::kv_failed_atom::value, id, why);
  report(self);
}

// A message another instance may send: from one of this instance's prefill instances (reached, and with
// --kv-secret authenticated).
bool from_peer(DecodeSelf self, const char* what) {
  if (from_this_process(self)) return true;
  const auto& st = self->state;
  const auto& sender = self->current_sender();
  for (size_t p = 0; sender && p < st.router->num_peers(); ++p)
    if (st.router->is_up(p) && st.router->peer(p).actor.node() == sender->node()) return true;
  refuse_sender(self, what, "not one of this instance's prefill instances");
  return false;
}

// Admin: the prefill instances, their transfers in flight and device links.
KvTransferView view(const DecodeKvState& st) {
  KvTransferView v;
  for (size_t p = 0; p < st.router->num_peers(); ++p)
    v.peers.push_back({st.router->address(p).str(), st.router->is_up(p), st.router->in_flight(p),
                       st.router->peer(p).link.state == PeerLink::State::Up});
  v.link_transport = st.link_transport;
  v.transfers_in_flight = st.router->in_flight();
  return v;
}

// Decode side: a fresh link id from the worker goes to the prefill instance, and both workers open their end.
// Each link gets a name of its own, which the headers of KV sent on it carry: a header from before a reopen
// can never be received on the new link (NCCL would pair it with another request's send).
void open_link(DecodeSelf self, size_t peer) {
  auto& st = self->state;
  close_link(self, st.router->peer(peer).link.close());
  ask(self, st.worker, caf::infinite, msg::link_id_atom::value)
      .then(
          [self, peer](const std::string& id) {
            auto& st = self->state;
            if (!st.router->is_up(peer)) return;
            // Named after its id (random), so unique among every link of every decode instance a prefill instance
            // serves.
            char hash[17];
            std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>{}(id));
            const std::string name = std::string(hash) + " to " + st.router->address(peer).str();
            close_link(self, st.router->peer(peer).link.opening(name));
            self->send(st.router->peer(peer).actor, msg::link_open_atom::value, id, name,
                       caf::actor_cast<caf::actor>(self));
            ask(self, st.worker, caf::infinite, msg::link_open_atom::value, name, id, int32_t(1))
                .then(
                    [self, peer, name](bool) {
                      if (self->state.router->peer(peer).link.opened(name))  // else replaced meanwhile
                        spdlog::info("device link {} is up ({})", name, self->state.link_transport);
                    },
                    [self, peer, name](const caf::error& err) {
                      spdlog::warn("device link {} failed ({}); its KV comes over TCP", name,
                                   self->system().render(err));
                      self->state.router->peer(peer).link.failed(name, now_seconds() + self->state.timeout_s);
                    });
          },
          [self, peer](const caf::error& err) {
            spdlog::warn("no device link id: {}", self->system().render(err));
            self->state.router->peer(peer).link.fail(now_seconds() + self->state.timeout_s);
          });
}

void peer_up(DecodeSelf self, size_t peer, msg::prefill_kv_actor prefill) {
  auto& st = self->state;
  self->monitor(prefill);
  st.router->up(peer, std::move(prefill));
  spdlog::info("prefill instance {} is up{}", st.router->address(peer).str(),
               st.auth.enabled() ? " (authenticated)" : "");
  if (!st.link_transport.empty()) open_link(self, peer);
}

// Decode side: the peer did not prove the secret (or refused ours); it is not used, and tried again a
// transfer timeout later.
void auth_failed(DecodeSelf self, size_t peer, const std::string& why) {
  auto& st = self->state;
  st.router->connect_failed(peer, now_seconds() + st.timeout_s);
  ++st.stats.auth_failures;
  report(self);
  spdlog::warn("prefill instance {} failed authentication ({}); not used, tried again in {} s",
               st.router->address(peer).str(), why, st.timeout_s);
}

// Decode side, with --kv-secret: the exchange of engine/kv_peer_auth.hpp before the peer counts as up.
void authenticate(DecodeSelf self, size_t peer, msg::prefill_kv_actor prefill) {
  const std::string nonce = KvPeerAuth::new_nonce();
  const auto timeout = std::chrono::milliseconds(int64_t(self->state.timeout_s * 1000));
  ask(self, prefill, timeout, msg::auth_challenge_atom::value, nonce)
      .then(
          [self, peer, prefill, nonce, timeout](const std::string& their_nonce, const std::string& proof) {
            auto& auth = self->state.auth;
            if (!auth.prefill_proof_ok(nonce, {their_nonce, proof}))
              return auth_failed(
                  self, peer, their_nonce.empty() ? "it has no --kv-secret" : "its answer does not prove the secret");
            ask(self, prefill, timeout, msg::auth_proof_atom::value, auth.decode_proof(nonce, their_nonce))
                .then(
                    [self, peer, prefill](bool accepted) {
                      if (!accepted) return auth_failed(self, peer, "it refused this instance's proof");
                      peer_up(self, peer, prefill);
                    },
                    [self, peer](const caf::error& e) { auth_failed(self, peer, self->system().render(e)); });
          },
          [self, peer](const caf::error& e) { auth_failed(self, peer, self->system().render(e)); });
}

void connect(DecodeSelf self, size_t peer) {
  auto& st = self->state;
  st.router->connecting(peer);
  const PeerAddress& a = st.router->address(peer);
  ask(self, self->system().middleman().actor_handle(), caf::infinite, caf::connect_atom::value, a.host, a.port)
      .then(
          [self, peer](const caf::node_id&, caf::strong_actor_ptr serv, const std::set<std::string>&) {
            if (!serv) return self->state.router->connect_failed(peer);
            auto prefill = caf::actor_cast<msg::prefill_kv_actor>(serv);
            if (self->state.auth.enabled())
              authenticate(self, peer, std::move(prefill));
            else
              peer_up(self, peer, std::move(prefill));
          },
          [self, peer](const caf::error&) { self->state.router->connect_failed(peer); });
}

// Once a tick: transfer deadlines, prefill instances to connect to, device links to open again.
void tick(DecodeSelf self) {
  auto& st = self->state;
  const double now = now_seconds();
  for (const std::string& id : st.router->expired(now)) {
    st.router->finished(id);
    fail(self, id, "no KV from the prefill instance within " + std::to_string(int(st.timeout_s)) + " s");
  }
  for (size_t p = 0; p < st.router->num_peers(); ++p) {
    if (st.router->connect_due(p, now)) connect(self, p);
    if (st.router->is_up(p) && st.router->peer(p).link.reopen_due(now)) {
      spdlog::info("opening a new device link to prefill instance {}", st.router->address(p).str());
      open_link(self, p);
    }
  }
  self->delayed_send(self, kTick, msg::tick_atom::value);
}

// A header, its KV inline or following on the device link it names. The worker receives it whatever became of the
// request where it is on a link (the link pairs receives with sends in order, so receives are posted in the order
// headers arrive); once it is in, the scheduler lands it in the request's blocks or drops it, unless the transfer
// was given up here (dropped at once). A receive that fails breaks its link and fails the transfer (the scheduler
// prefills it itself).
void receive(DecodeSelf self, KvTransferPayload p, size_t header_bytes) {
  auto& st = self->state;
  const std::string link = p.kv_link;
  const bool wanted = st.router->finished(p.req_id).has_value();
  if (!wanted) spdlog::warn("request {}: its KV arrived after its transfer was given up", p.req_id);
  if (link.empty() && !wanted) return void(st.routed_at.erase(p.req_id));  // no link to pair a receive with
  if (std::string why = kv_layout_mismatch(p.layout, st.layout); link.empty() && !why.empty())
    return fail(self, p.req_id, why);
  if (wanted) {
    ++st.stats.transfers, st.stats.blocks += p.num_blocks;
    st.stats.bytes += int64_t(header_bytes) + (link.empty() ? 0 : p.layout.bytes(p.num_blocks));
    report(self);
  }
  const int64_t num_bytes = link.empty() ? int64_t(p.kv.size()) : p.layout.bytes(p.num_blocks);
  std::vector<uint8_t> inline_kv = std::exchange(p.kv, {});
  ask(self, st.worker, caf::infinite, msg::kv_recv_atom::value, p.req_id, link, num_bytes, std::move(inline_kv))
      .then(
          [self, p, wanted](bool) {
            auto& st = self->state;
            if (const auto routed = st.routed_at.find(p.req_id); routed != st.routed_at.end()) {
              st.stats.latencies.push_back(now_seconds() - routed->second);  // its latency ends with the KV in
              st.routed_at.erase(routed);
              report(self);
            }
            if (!wanted) return self->send(st.worker, msg::kv_drop_atom::value, p.req_id);
            self->send(st.scheduler, msg::kv_atom::value, p);
          },
          [self, id = p.req_id, link](const caf::error& err) {
            if (!link.empty()) {
              self->send(self->state.worker, msg::link_close_atom::value, link);
              self->state.router->link_broken(link, now_seconds() + self->state.timeout_s);
            }
            fail(self, id,
                 (link.empty() ? "receiving its KV failed: " : "receiving it on the device link failed: ") +
                     self->system().render(err));
          });
}

}  // namespace

msg::decode_kv_actor::behavior_type decode_behavior(DecodeSelf self, KvTransferSetup setup,
                                                    std::vector<PeerAddress> peers, RoutingPolicy routing) {
  auto& st = self->state;
  st.start(std::move(setup));
  st.router = std::make_unique<PrefillRouter<msg::prefill_kv_actor>>(std::move(peers), routing);
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    for (size_t p = 0; p < st.router->num_peers(); ++p)
      if (st.router->is_up(p) && dm.source == st.router->peer(p).actor.address()) {
        close_link(self, st.router->peer(p).link.close());
        spdlog::warn("prefill instance {} went down", st.router->address(p).str());
        for (const std::string& id : st.router->down(p))
          fail(self, id, "prefill instance " + st.router->address(p).str() + " went down");
      }
  });
  self->send(self, msg::tick_atom::value);
  return counted_behavior(
      self,
      [self](msg::link_broken_atom, const std::string& name) {  // that link broke (or a send on it failed)
        auto& st = self->state;
        if (!from_peer(self, "link closed")) return;
        self->send(st.worker, msg::link_close_atom::value, name);    // a no-op where the worker dropped it already
        st.router->link_broken(name, now_seconds() + st.timeout_s);  // KV over TCP until it reopens
      },
      [self](msg::route_atom, const std::string& id, const std::string& json) {
        auto& st = self->state;
        if (!local_only(self, "route")) return;
        const std::optional<size_t> peer = st.router->pick();
        if (!peer) return fail(self, id, "no prefill instance is up");
        st.router->started(id, *peer, now_seconds() + st.timeout_s);
        st.routed_at[id] = now_seconds();
        self->send(st.router->peer(*peer).actor, msg::prefill_atom::value, json, caf::actor_cast<caf::actor>(self));
      },
      [self](msg::kv_atom, const std::string& bytes) {
        if (!from_peer(self, "KV")) return;
        KvTransferPayload p;
        try {
          p = decode_kv_transfer(bytes);
        } catch (const std::exception& e) {
          spdlog::error("unreadable KV from a prefill instance: {}", e.what());
          return;
        }
        // The sender frees its blocks whether or not the KV still has a taker here.
        self->send(caf::actor_cast<msg::prefill_kv_actor>(self->current_sender()), msg::release_atom::value, p.req_id);
        receive(self, std::move(p), bytes.size());
      },
      [self](msg::kv_failed_atom, const std::string& id, const std::string& why) {
        auto& st = self->state;
        if (!from_peer(self, "failed")) return;
        st.routed_at.erase(id);
        if (st.router->finished(id)) fail(self, id, "the prefill instance refused it: " + why);
      },
      [self](msg::tick_atom) {
        if (local_only(self, "tick")) tick(self);
      },
      [self](msg::requests_atom) { return local_only(self, "admin") ? view(self->state) : KvTransferView{}; });
}

}  // namespace parley::kv_transfer
