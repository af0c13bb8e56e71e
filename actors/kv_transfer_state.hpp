// The KV transfer actors' states and what their two roles share: kv_transfer_actor.cpp (the shared checks and
// spawning), kv_transfer_prefill.cpp and kv_transfer_decode.cpp (one actor type per role, each a shell over
// engine/kv_transfer_sides.hpp and, decode side, engine/prefill_router.hpp). Included by those three files only.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/actors.hpp"
#include "engine/kv_peer_auth.hpp"
#include "engine/kv_transfer_sides.hpp"

namespace parley::kv_transfer {

constexpr auto kTick = std::chrono::milliseconds(250);

// What both roles keep.
struct KvShared {
  msg::scheduler_actor scheduler;
  msg::output_actor output;
  double timeout_s = 30;
  KvLayout layout;  // this instance's
  msg::worker_actor worker;
  std::string link_transport;  // "": no device links
  msg::KvTransferStats stats;
  KvPeerAuth auth;  // --kv-secret ("": every peer trusted)
  uint64_t handled = 0;
  void start(KvTransferSetup setup);
};

// Prefill side: the decode instances awaiting KV, the leases on pushed blocks, the links to them.
struct PrefillKvState : KvShared {
  PrefillKvState() = default;  // not an aggregate: CAF would try to build the state from the actor pointer
  std::unique_ptr<DecodeClients<caf::actor>> clients;
};
using PrefillSelf = msg::prefill_kv_actor::stateful_pointer<PrefillKvState>;

// Decode side: one Peer per prefill instance (its handle, connection, transfers and device link).
struct DecodeKvState : KvShared {
  DecodeKvState() = default;
  std::unique_ptr<PrefillRouter<msg::prefill_kv_actor>> router;
  std::unordered_map<std::string, double> routed_at;  // for the latency histogram
};
using DecodeSelf = msg::decode_kv_actor::stateful_pointer<DecodeKvState>;

// The counters to the output actor (/metrics).
template <class Self>
void report(Self self) {
  self->send(self->state.output, msg::kv_stats_atom::value, self->state.stats);
  self->state.stats.latencies.clear();
}

// A device link ("" is none) is closed on this instance's worker: transfers on it fail (and recompute).
template <class Self>
void close_link(Self self, const std::string& name) {
  if (!name.empty()) self->send(self->state.worker, msg::link_close_atom::value, name);
}

// A message refused for where it came from: counted (parley:kv_peer_auth_failures_total) and logged.
void refuse_sender(KvShared& state, const caf::strong_actor_ptr& sender, const char* what, const std::string& why);
template <class Self>
void refuse_sender(Self self, const char* what, const std::string& why) {
  refuse_sender(self->state, self->current_sender(), what, why);
  report(self);
}

// The sender is an actor of this process.
template <class Self>
bool from_this_process(Self self) {
  const auto& sender = self->current_sender();
  return sender && sender->node() == self->node();
}

// The scheduler's, the worker's and the actor's own messages: from another process they are refused.
template <class Self>
bool local_only(Self self, const char* what) {
  if (from_this_process(self)) return true;
  refuse_sender(self, what, "it is sent only within an instance");
  return false;
}

msg::prefill_kv_actor::behavior_type prefill_behavior(PrefillSelf self, KvTransferSetup setup);
msg::decode_kv_actor::behavior_type decode_behavior(DecodeSelf self, KvTransferSetup setup,
                                                    std::vector<PeerAddress> peers, RoutingPolicy routing);

}  // namespace parley::kv_transfer
