// The KV transfer actor: on a decode instance it routes prompts to prefill instances (the
// PrefillRouter decides), receives their KV and first tokens, and turns deadlines and dead peers into
// failures; on a prefill instance it takes prompts from decode instances, pushes each handed-off
// request's KV to the instance that sent it, and frees the blocks when that instance acknowledges or the
// lease runs out. Only built-in types cross processes: JSON and encode_kv_transfer bytes in strings.
// With a device link transport, a decode instance opens a link to each prefill instance it reaches (the
// id travels here, the workers open the ends); a prefill instance then sends that instance's KV on it.
// With --kv-secret a decode instance authenticates to each prefill instance (and it to the decode instance)
// before any prompt or KV moves; messages from other processes that may not come from them are refused.
#include <spdlog/spdlog.h>

#include <caf/io/all.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <unordered_map>

#include "actors/actors.hpp"
#include "engine/kv_peer_auth.hpp"
#include "engine/kv_transfer_sides.hpp"

namespace parley {
namespace {

constexpr auto kTick = std::chrono::milliseconds(250);

// Decode side: one prefill instance of the router's (same index): the connection to it (its device link is
// PrefillLinks').
struct PrefillPeer {
  msg::kv_transfer_actor actor;  // null while down
  bool connecting = false;       // a connection attempt is on its way
};

struct KvState {
  KvState() = default;  // not an aggregate: CAF would try to build the state from the actor pointer
  msg::scheduler_actor scheduler;
  msg::output_actor output;
  double timeout_s = 30;
  KvLayout layout;  // this instance's
  msg::worker_actor worker;
  std::string link_transport;  // "": no device links
  // Decode side.
  std::unique_ptr<PrefillRouter> router;
  std::vector<PrefillPeer> peers;                     // per router peer
  std::unique_ptr<PrefillLinks> links;                // per router peer
  std::unordered_map<std::string, double> routed_at;  // for the latency histogram
  // Prefill side: the decode instances awaiting KV, the leases on pushed blocks, the links to them.
  std::unique_ptr<DecodeClients<caf::actor>> clients;
  msg::KvTransferStats stats;
  KvPeerAuth auth;  // --kv-secret ("": every peer trusted, as before)
  uint64_t handled = 0;
};
using Self = msg::kv_transfer_actor::stateful_pointer<KvState>;

void report(Self self) {
  self->send(self->state.output, msg::kv_stats_atom::value, self->state.stats);
  self->state.stats.latencies.clear();
}

void fail(Self self, const std::string& id, const std::string& why) {
  self->state.routed_at.erase(id);  // a timed-out or lost transfer takes its start time with it
  ++self->state.stats.failures;
  self->send(self->state.scheduler, msg::kv_failed_atom::value, id, why);
  report(self);
}

// A device link ("" is none) is closed on this instance's worker: transfers on it fail (and recompute).
void close_link(Self self, const std::string& name) {
  if (!name.empty()) self->send(self->state.worker, msg::link_close_atom::value, name);
}

// Decode side: a fresh link id from the worker goes to the prefill instance, and both workers open their end.
// Each link gets a name of its own, which the headers of KV sent on it carry: a header from before a reopen
// can never be received on the new link (NCCL would pair it with another request's send).
void open_link(Self self, size_t peer) {
  auto& st = self->state;
  close_link(self, st.links->close(peer));
  ask(self, st.worker, caf::infinite, msg::link_id_atom::value)
      .then(
          [self, peer](const std::string& id) {
            auto& st = self->state;
            PrefillPeer& to = st.peers[peer];
            if (!to.actor) return;
            // Named after its id (random), so unique among every link of every decode instance a prefill instance
            // serves.
            char hash[17];
            std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>{}(id));
            const std::string name = std::string(hash) + " to " + st.router->address(peer).str();
            close_link(self, st.links->opening(peer, name));
            self->send(to.actor, msg::link_open_atom::value, id, name, caf::actor_cast<caf::actor>(self));
            ask(self, st.worker, caf::infinite, msg::link_open_atom::value, name, id, int32_t(1))
                .then(
                    [self, peer, name](bool) {
                      if (self->state.links->opened(peer, name))  // else replaced meanwhile
                        spdlog::info("device link {} is up ({})", name, self->state.link_transport);
                    },
                    [self, peer, name](const caf::error& err) {
                      spdlog::warn("device link {} failed ({}); its KV comes over TCP", name,
                                   self->system().render(err));
                      self->state.links->failed(peer, name, now_seconds());
                    });
          },
          [self, peer](const caf::error& err) {
            spdlog::warn("no device link id: {}", self->system().render(err));
            self->state.links->fail(peer, now_seconds());
          });
}

// A message refused for where it came from: counted (parley:kv_peer_auth_failures_total) and logged.
void refuse_sender(Self self, const char* what, const std::string& why) {
  const auto& sender = self->current_sender();
  ++self->state.stats.auth_failures;
  report(self);
  spdlog::warn("KV transfer: refused a {} message from {}: {}", what,
               sender ? "node " + caf::to_string(sender->node()) : std::string("an anonymous sender"), why);
}

bool from_this_process(Self self) {
  const auto& sender = self->current_sender();
  return sender && sender->node() == self->node();
}

// The scheduler's, the worker's and the actor's own messages: from another process they are refused.
bool local_only(Self self, const char* what) {
  if (from_this_process(self)) return true;
  refuse_sender(self, what, "it is sent only within an instance");
  return false;
}

// A message another instance may send: on a decode instance, from one of its prefill instances (reached,
// and with --kv-secret authenticated); on a prefill instance, from a decode instance that authenticated (any
// without --kv-secret).
bool from_peer(Self self, const char* what) {
  if (from_this_process(self)) return true;
  auto& st = self->state;
  const auto& sender = self->current_sender();
  if (sender && st.router) {
    for (const PrefillPeer& p : st.peers)
      if (p.actor && p.actor.node() == sender->node()) return true;
  } else if (sender && (!st.auth.enabled() || st.auth.trusted(caf::to_string(sender->node())))) {
    return true;
  }
  refuse_sender(self, what,
                st.router ? "not one of this instance's prefill instances" : "it has not authenticated (--kv-secret)");
  return false;
}

void peer_up(Self self, size_t peer, msg::kv_transfer_actor prefill) {
  auto& st = self->state;
  st.peers[peer].connecting = false;
  st.peers[peer].actor = std::move(prefill);
  self->monitor(st.peers[peer].actor);
  st.router->set_up(peer, true);
  spdlog::info("prefill instance {} is up{}", st.router->address(peer).str(),
               st.auth.enabled() ? " (authenticated)" : "");
  if (!st.link_transport.empty()) open_link(self, peer);
}

// Decode side: the peer did not prove the secret (or refused ours); it is not used, and tried again a
// transfer timeout later.
void auth_failed(Self self, size_t peer, const std::string& why) {
  auto& st = self->state;
  st.peers[peer].connecting = false;
  st.router->hold_off(peer, now_seconds() + st.timeout_s);
  ++st.stats.auth_failures;
  report(self);
  spdlog::warn("prefill instance {} failed authentication ({}); not used, tried again in {} s",
               st.router->address(peer).str(), why, st.timeout_s);
}

// Decode side, with --kv-secret: the exchange of engine/kv_peer_auth.hpp before the peer counts as up.
void authenticate(Self self, size_t peer, msg::kv_transfer_actor prefill) {
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

void connect(Self self, size_t peer) {
  auto& st = self->state;
  st.peers[peer].connecting = true;
  const PeerAddress& a = st.router->address(peer);
  ask(self, self->system().middleman().actor_handle(), caf::infinite, caf::connect_atom::value, a.host, a.port)
      .then(
          [self, peer](const caf::node_id&, caf::strong_actor_ptr serv, const std::set<std::string>&) {
            if (!serv) {
              self->state.peers[peer].connecting = false;
              return;
            }
            auto prefill = caf::actor_cast<msg::kv_transfer_actor>(serv);
            if (self->state.auth.enabled())
              authenticate(self, peer, std::move(prefill));
            else
              peer_up(self, peer, std::move(prefill));
          },
          [self, peer](const caf::error&) { self->state.peers[peer].connecting = false; });
}

void tick(Self self) {
  auto& st = self->state;
  const double now = now_seconds();
  for (const std::string& id : st.clients->expired(now)) {
    spdlog::warn("request {}: no acknowledgement of its KV within {} s; freeing its blocks", id, st.timeout_s);
    self->send(st.scheduler, msg::release_atom::value, id);
  }
  if (st.router) {
    for (const std::string& id : st.router->expired(now)) {
      st.router->finished(id);
      fail(self, id, "no KV from the prefill instance within " + std::to_string(int(st.timeout_s)) + " s");
    }
    for (size_t p = 0; p < st.router->num_peers(); ++p) {
      const PrefillPeer& peer = st.peers[p];
      if (!st.router->is_up(p) && !peer.connecting && !st.router->held_off(p, now)) connect(self, p);
      if (peer.actor && st.links->reopen_due(p, now)) {
        spdlog::info("opening a new device link to prefill instance {}", st.router->address(p).str());
        open_link(self, p);
      }
    }
  }
  self->delayed_send(self, kTick, msg::tick_atom::value);
}

// Decode side: a header whose KV follows on the device link it names. The scheduler has the worker receive
// it whatever became of the request (the link pairs receives with sends in order), so it goes there even
// when the transfer was given up or does not fit (the scheduler drops the data then).
void kv_header(Self self, KvTransferPayload p, size_t header_bytes) {
  auto& st = self->state;
  if (st.router && st.router->finished(p.req_id)) {
    ++st.stats.transfers, st.stats.blocks += p.num_blocks;
    st.stats.bytes += int64_t(header_bytes) + p.layout.bytes(p.num_blocks);
    report(self);
  } else {
    spdlog::warn("request {}: its KV arrived after its transfer was given up", p.req_id);
  }
  self->send(st.scheduler, msg::kv_atom::value, std::move(p));
}

msg::kv_transfer_actor::behavior_type kv_fun(Self self, msg::scheduler_actor scheduler, msg::output_actor output,
                                             std::vector<PeerAddress> peers, RoutingPolicy routing, double timeout_s,
                                             KvLayout layout, msg::worker_actor worker, std::string link_transport,
                                             std::string kv_secret) {
  auto& st = self->state;
  st.auth = KvPeerAuth(std::move(kv_secret));
  st.layout = layout;
  st.worker = std::move(worker);
  st.link_transport = std::move(link_transport);
  st.scheduler = std::move(scheduler);
  st.output = std::move(output);
  st.timeout_s = timeout_s;
  if (!peers.empty()) {
    st.peers.resize(peers.size());
    // A link that failed is opened again a transfer timeout later.
    st.links = std::make_unique<PrefillLinks>(peers.size(), timeout_s);
    st.router = std::make_unique<PrefillRouter>(std::move(peers), routing);
  }
  st.clients = std::make_unique<DecodeClients<caf::actor>>(timeout_s);  // leases last a transfer timeout
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    {  // prefill side: its communicator goes
      const std::string link =
          st.clients->forget_link_where([&](const caf::actor& decode) { return decode.address() == dm.source; });
      if (!link.empty()) spdlog::info("decode instance of device link {} went down; closing the link", link);
      close_link(self, link);
    }
    for (size_t p = 0; st.router && p < st.peers.size(); ++p)
      if (st.peers[p].actor && dm.source == st.peers[p].actor.address()) {
        st.peers[p].actor = nullptr;
        close_link(self, st.links->close(p));
        spdlog::warn("prefill instance {} went down", st.router->address(p).str());
        for (const std::string& id : st.router->set_up(p, false))
          fail(self, id, "prefill instance " + st.router->address(p).str() + " went down");
      }
  });
  self->send(self, msg::tick_atom::value);
  return counted_behavior(
      self,
      [self](msg::auth_challenge_atom,
             const std::string& nonce) -> caf::result<std::string, std::string> {  // prefill side
        auto& st = self->state;
        const auto& sender = self->current_sender();
        if (!st.auth.enabled() || !sender || st.router) {
          spdlog::warn(
              "a KV peer asked to authenticate; this instance has no --kv-secret (or is not a prefill instance)");
          return {std::string(), std::string()};
        }
        KvPeerAuth::Answer a = st.auth.answer(caf::to_string(sender->node()), nonce);
        return {std::move(a.nonce), std::move(a.proof)};
      },
      [self](msg::auth_proof_atom, const std::string& proof) {  // prefill side
        auto& st = self->state;
        const auto& sender = self->current_sender();
        if (sender && !st.router && st.auth.accept(caf::to_string(sender->node()), proof)) {
          spdlog::info("decode instance on node {} authenticated", caf::to_string(sender->node()));
          return true;
        }
        refuse_sender(self, "proof", "it does not prove the secret");
        return false;
      },
      [self](msg::prefill_atom, const std::string& json, const caf::actor& to) {  // prefill side
        if (!from_peer(self, "prefill")) {
          // The refusal (no prompt computed, no KV) lets such a decode instance prefill locally at once.
          const auto& sender = self->current_sender();
          if (sender && to && to.node() == sender->node()) try {
              const std::string id = decode_prefill_request(json, nullptr).request_id;
              self->send(caf::actor_cast<msg::kv_transfer_actor>(to), msg::kv_failed_atom::value, id,
                         std::string("this prefill instance requires --kv-secret authentication"));
            } catch (const std::exception&) {}
          return;
        }
        try {
          KvLayout theirs;
          Request r = decode_prefill_request(json, &theirs);
          if (std::string why = kv_layout_mismatch(self->state.layout, theirs); !why.empty()) {
            spdlog::warn("request {} refused: {}", r.request_id,
                         why);  // before computing KV the decode side cannot take
            return self->send(caf::actor_cast<msg::kv_transfer_actor>(to), msg::kv_failed_atom::value, r.request_id,
                              why);
          }
          std::string link = self->state.clients->accept(r.request_id, to);
          self->send(self->state.scheduler, msg::prefill_atom::value, std::move(r), std::move(link));
        } catch (const std::exception& e) {
          spdlog::error("a decode instance sent a request this instance cannot read: {}", e.what());
        }
      },
      [self](msg::push_atom, const std::string& id, const std::string& bytes, int32_t blocks,
             bool on_link) {  // prefill side
        auto& st = self->state;
        if (!local_only(self, "push")) return;
        const std::optional<caf::actor> to = st.clients->pushed(id, now_seconds());
        if (!to) return self->send(st.scheduler, msg::release_atom::value, id);
        self->send(caf::actor_cast<msg::kv_transfer_actor>(*to), msg::kv_atom::value, bytes);
        ++st.stats.transfers, st.stats.blocks += blocks;
        st.stats.bytes += int64_t(bytes.size()) + (on_link ? st.layout.bytes(blocks) : 0);
        report(self);
      },
      [self](msg::link_broken_atom, const std::string& name) {  // that link broke (or a send on it failed)
        auto& st = self->state;
        if (!from_peer(self, "link closed")) return;
        if (st.worker)
          self->send(st.worker, msg::link_close_atom::value, name);  // a no-op where the worker dropped it already
        // Prefill side: the decode end closes too, and opens a new link later.
        for (const caf::actor& decode : st.clients->link_broken(name))
          if (auto to = caf::actor_cast<msg::kv_transfer_actor>(decode))
            self->send(to, msg::link_broken_atom::value, name);
        if (st.links) st.links->broken(name, now_seconds());
      },
      [self](msg::link_open_atom, const std::string& id, const std::string& name,
             const caf::actor& decode) {  // prefill side
        auto& st = self->state;
        if (!from_peer(self, "link")) return;
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
      },
      [self](msg::refuse_atom, const std::string& id, const std::string& why) {  // prefill side
        auto& st = self->state;
        if (!local_only(self, "refuse")) return;
        if (const std::optional<caf::actor> to = st.clients->refused(id))
          self->send(caf::actor_cast<msg::kv_transfer_actor>(*to), msg::kv_failed_atom::value, id, why);
      },
      [self](msg::release_atom, const std::string& id) {  // prefill side: acknowledged
        if (!from_peer(self, "release")) return;
        if (self->state.clients->acknowledged(id)) self->send(self->state.scheduler, msg::release_atom::value, id);
      },
      [self](msg::route_atom, const std::string& id, const std::string& json) {  // decode side
        auto& st = self->state;
        if (!local_only(self, "route")) return;
        const std::optional<size_t> peer = st.router ? st.router->pick() : std::nullopt;
        if (!peer) return fail(self, id, "no prefill instance is up");
        st.router->started(id, *peer, now_seconds() + st.timeout_s);
        st.routed_at[id] = now_seconds();
        self->send(st.peers[*peer].actor, msg::prefill_atom::value, json, caf::actor_cast<caf::actor>(self));
      },
      [self](msg::kv_atom, const std::string& bytes) {  // decode side
        auto& st = self->state;
        if (!from_peer(self, "KV")) return;
        KvTransferPayload p;
        try {
          p = decode_kv_transfer(bytes);
        } catch (const std::exception& e) {
          spdlog::error("unreadable KV from a prefill instance: {}", e.what());
          return;
        }
        // The sender frees its blocks whether or not the KV still has a taker here.
        self->send(caf::actor_cast<msg::kv_transfer_actor>(self->current_sender()), msg::release_atom::value, p.req_id);
        if (!p.kv_link.empty())
          return kv_header(self, std::move(p), bytes.size());  // its latency ends when the KV is in
        const double routed = st.routed_at.count(p.req_id) ? st.routed_at[p.req_id] : now_seconds();
        st.routed_at.erase(p.req_id);
        if (!st.router || !st.router->finished(p.req_id)) {
          spdlog::warn("request {}: its KV arrived after its transfer was given up", p.req_id);
          return;
        }
        if (std::string why = kv_layout_mismatch(p.layout, st.layout); !why.empty()) return fail(self, p.req_id, why);
        ++st.stats.transfers, st.stats.blocks += p.num_blocks, st.stats.bytes += int64_t(bytes.size());
        st.stats.latencies.push_back(now_seconds() - routed);
        report(self);
        self->send(st.scheduler, msg::kv_atom::value, std::move(p));
      },
      [self](msg::kv_received_atom, const std::string& id, bool received) {  // decode side
        auto& st = self->state;
        if (!local_only(self, "received")) return;
        const auto routed = st.routed_at.find(id);
        if (routed == st.routed_at.end()) return;
        if (received) st.stats.latencies.push_back(now_seconds() - routed->second), report(self);
        st.routed_at.erase(routed);
      },
      [self](msg::kv_failed_atom, const std::string& id, const std::string& why) {  // decode side
        auto& st = self->state;
        if (!from_peer(self, "failed")) return;
        st.routed_at.erase(id);
        if (st.router && st.router->finished(id)) fail(self, id, "the prefill instance refused it: " + why);
      },
      [self](msg::tick_atom) {
        if (local_only(self, "tick")) tick(self);
      },
      [self](msg::requests_atom) {
        auto& st = self->state;
        if (!local_only(self, "admin")) return std::string("{}");
        nlohmann::json peers = nlohmann::json::array();
        for (size_t p = 0; st.router && p < st.router->num_peers(); ++p)
          peers.push_back({{"address", st.router->address(p).str()},
                           {"up", st.router->is_up(p)},
                           {"in_flight", st.router->in_flight(p)},
                           {"device_link", st.links->state(p) == PrefillLinks::State::Up}});
        const auto& clients = *st.clients;
        return nlohmann::json{{"peers", peers},
                              {"link_transport", st.link_transport},
                              {"links_to_decode", clients.num_links()},
                              {"transfers_in_flight", st.router ? st.router->in_flight() : 0},
                              {"awaiting_prefill", clients.num_awaiting()},
                              {"held_for_decode", clients.num_leased()}}
            .dump();
      });
}

}  // namespace

msg::kv_transfer_actor spawn_kv_transfer(caf::actor_system& sys, msg::scheduler_actor scheduler,
                                         msg::output_actor output, std::vector<PeerAddress> peers,
                                         RoutingPolicy routing, double timeout_s, KvLayout layout,
                                         msg::worker_actor worker, std::string link_transport, std::string kv_secret) {
  return sys.spawn(kv_fun, std::move(scheduler), std::move(output), std::move(peers), routing, timeout_s, layout,
                   std::move(worker), std::move(link_transport), std::move(kv_secret));
}

}  // namespace parley
