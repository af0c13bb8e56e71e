// The KV transfer actor's state and what its two behaviours share: kv_transfer_actor.cpp (the shared checks,
// spawning the behaviour of the instance's role), kv_transfer_prefill.cpp and kv_transfer_decode.cpp (one
// behaviour per role, each a shell over engine/kv_transfer_sides.hpp and, decode side, engine/prefill_router).
// Included by those three files only.
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

// The counters to the output actor (/metrics).
void report(Self self);
// A device link ("" is none) is closed on this instance's worker: transfers on it fail (and recompute).
void close_link(Self self, const std::string& name);
// A message refused for where it came from: counted (parley:kv_peer_auth_failures_total) and logged.
void refuse_sender(Self self, const char* what, const std::string& why);
// The scheduler's, the worker's and the actor's own messages: from another process they are refused.
bool local_only(Self self, const char* what);
// A message another instance may send: on a decode instance, from one of its prefill instances (reached,
// and with --kv-secret authenticated); on a prefill instance, from a decode instance that authenticated (any
// without --kv-secret).
bool from_peer(Self self, const char* what);
// A message of the other role's: logged and dropped.
void wrong_role(Self self, const char* what);
// Admin: peers, transfers in flight and blocks held for transfers, as JSON.
std::string admin_json(Self self);

msg::kv_transfer_actor::behavior_type prefill_behavior(Self self);
msg::kv_transfer_actor::behavior_type decode_behavior(Self self);

}  // namespace parley::kv_transfer
