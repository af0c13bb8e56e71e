// The KV transfer actor (this file: what both roles share, and spawning; one behaviour per role in
// kv_transfer_prefill.cpp and kv_transfer_decode.cpp): on a decode instance it routes prompts to prefill instances (the
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

#include "actors/kv_transfer_state.hpp"

namespace parley::kv_transfer {

void report(Self self) {
  self->send(self->state.output, msg::kv_stats_atom::value, self->state.stats);
  self->state.stats.latencies.clear();
}

void close_link(Self self, const std::string& name) {
  if (!name.empty()) self->send(self->state.worker, msg::link_close_atom::value, name);
}

void refuse_sender(Self self, const char* what, const std::string& why) {
  const auto& sender = self->current_sender();
  ++self->state.stats.auth_failures;
  report(self);
  spdlog::warn("KV transfer: refused a {} message from {}: {}", what,
               sender ? "node " + caf::to_string(sender->node()) : std::string("an anonymous sender"), why);
}

namespace {

bool from_this_process(Self self) {
  const auto& sender = self->current_sender();
  return sender && sender->node() == self->node();
}

}  // namespace

bool local_only(Self self, const char* what) {
  if (from_this_process(self)) return true;
  refuse_sender(self, what, "it is sent only within an instance");
  return false;
}

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

void wrong_role(Self self, const char* what) {
  spdlog::warn("KV transfer: a {} message reached this {} instance; dropped", what,
               self->state.router ? "decode" : "prefill");
}

std::string admin_json(Self self) {
  auto& st = self->state;
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
}

namespace {

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
  st.clients = std::make_unique<DecodeClients<caf::actor>>(timeout_s);  // leases last a transfer timeout
  if (peers.empty()) return prefill_behavior(self);
  st.peers.resize(peers.size());
  st.links = std::make_unique<PrefillLinks>(peers.size(), timeout_s);  // a failed link reopens a timeout later
  st.router = std::make_unique<PrefillRouter>(std::move(peers), routing);
  return decode_behavior(self);
}

}  // namespace
}  // namespace parley::kv_transfer

namespace parley {

msg::kv_transfer_actor spawn_kv_transfer(caf::actor_system& sys, msg::scheduler_actor scheduler,
                                         msg::output_actor output, std::vector<PeerAddress> peers,
                                         RoutingPolicy routing, double timeout_s, KvLayout layout,
                                         msg::worker_actor worker, std::string link_transport, std::string kv_secret) {
  return sys.spawn(kv_transfer::kv_fun, std::move(scheduler), std::move(output), std::move(peers), routing, timeout_s,
                   layout, std::move(worker), std::move(link_transport), std::move(kv_secret));
}

}  // namespace parley
