// The KV transfer actors (this file: what both roles share, and spawning; one actor type per role in
// kv_transfer_prefill.cpp and kv_transfer_decode.cpp): on a decode instance it routes prompts to prefill instances
// (the PrefillRouter decides), receives their KV and first tokens, and turns deadlines and dead peers into
// failures; on a prefill instance it takes prompts from decode instances, pushes each handed-off request's KV to
// the instance that sent it, and frees the blocks when that instance acknowledges or the lease runs out. Only
// built-in types cross processes: JSON and encode_kv_transfer bytes in strings.
// With a device link transport, a decode instance opens a link to each prefill instance it reaches (the
// id travels here, the workers open the ends); a prefill instance then sends that instance's KV on it.
// With --kv-secret a decode instance authenticates to each prefill instance (and it to the decode instance)
// before any prompt or KV moves; messages from other processes that may not come from them are refused.
#include <spdlog/spdlog.h>

#include "actors/kv_transfer_state.hpp"

namespace parley::kv_transfer {

void KvShared::start(KvTransferSetup setup) {
  scheduler = std::move(setup.scheduler);
  output = std::move(setup.output);
  timeout_s = setup.timeout_s;
  layout = setup.layout;
  worker = std::move(setup.worker);
  link_transport = std::move(setup.link_transport);
  auth = KvPeerAuth(std::move(setup.kv_secret));
}

void refuse_sender(KvShared& state, const caf::strong_actor_ptr& sender, const char* what, const std::string& why) {
  ++state.stats.auth_failures;
  spdlog::warn("KV transfer: refused a {} message from {}: {}", what,
               sender ? "node " + caf::to_string(sender->node()) : std::string("an anonymous sender"), why);
}

}  // namespace parley::kv_transfer

namespace parley {

msg::prefill_kv_actor spawn_prefill_kv(caf::actor_system& sys, KvTransferSetup setup) {
  return sys.spawn(kv_transfer::prefill_behavior, std::move(setup));
}

msg::decode_kv_actor spawn_decode_kv(caf::actor_system& sys, KvTransferSetup setup, std::vector<PeerAddress> peers,
                                     RoutingPolicy routing) {
  return sys.spawn(kv_transfer::decode_behavior, std::move(setup), std::move(peers), routing);
}

}  // namespace parley
