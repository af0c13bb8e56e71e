// The message protocol's prefill/decode half: the KV transfer actor, and what PD adds to the scheduler,
// the worker and the output actor (CAF's extend_with over the core interfaces in protocol.hpp).
//
//   decode scheduler --route--> kv transfer ==prefill==> prefill instance's kv transfer --prefill--> its
//   scheduler (hand-off after the first token; export from its worker) --push--> kv transfer ==kvdata==>
//   decode kv transfer --kvdata--> decode scheduler (import on its worker, then run) ==release==> back.
//
// "==" crosses processes over CAF's middleman (TCP), with only built-in types (strings, actor handles) in
// those messages. With a device link (--kv-transport nccl; decode kv transfer ==linkopen==> the prefill
// side's, both workers open their ends), only the header crosses: the prefill KV transfer actor has its worker
// send the blocks on the link, the decode one has its worker receive every header's KV in arrival order (the
// order they were sent) and hands the staged KV to its scheduler, which lands it in blocks only if the request
// still waits for it. The schedulers know no links: they push hand-offs and land or load what arrives.
#pragma once
#include "actors/protocol.hpp"
#include "engine/admin_view.hpp"
#include "engine/kv_transfer.hpp"

namespace parley::msg {

using prefill_atom = caf::atom_constant<caf::atom("prefill")>;
using kv_atom = caf::atom_constant<caf::atom("kvdata")>;
using kv_failed_atom = caf::atom_constant<caf::atom("kvfailed")>;
using refuse_atom = caf::atom_constant<caf::atom("kvrefuse")>;
using release_atom = caf::atom_constant<caf::atom("kvrelease")>;
using route_atom = caf::atom_constant<caf::atom("kvroute")>;
using push_atom = caf::atom_constant<caf::atom("kvpush")>;
using tick_atom = caf::atom_constant<caf::atom("kvtick")>;
using kv_stats_atom = caf::atom_constant<caf::atom("kvstats")>;
using link_id_atom = caf::atom_constant<caf::atom("kvlinkid")>;
using link_open_atom = caf::atom_constant<caf::atom("kvlinkopen")>;
using link_close_atom = caf::atom_constant<caf::atom("kvlinkclos")>;
using link_broken_atom = caf::atom_constant<caf::atom("kvlinkbrk")>;
using kv_send_atom = caf::atom_constant<caf::atom("kvsend")>;
using kv_sent_atom = caf::atom_constant<caf::atom("kvsent")>;
using kv_recv_atom = caf::atom_constant<caf::atom("kvrecv")>;
using kv_land_atom = caf::atom_constant<caf::atom("kvland")>;
using kv_drop_atom = caf::atom_constant<caf::atom("kvdrop")>;
using poll_atom = caf::atom_constant<caf::atom("kvpoll")>;
using auth_challenge_atom = caf::atom_constant<caf::atom("kvauthch")>;
using auth_proof_atom = caf::atom_constant<caf::atom("kvauthpr")>;

// The KV transfer actor's counters, for /metrics.
struct KvTransferStats {
  int64_t blocks = 0, bytes = 0, transfers = 0, failures = 0;
  int64_t auth_failures = 0;      // peers that failed --kv-secret authentication, and messages refused from them
  std::vector<double> latencies;  // seconds from routing to the KV's arrival, since the last report (histogram samples)
};

// What a KV transfer actor of either role answers its own instance.
using kv_transfer_local_actor = caf::typed_actor<
    // Local, every 250 ms: transfer deadlines, lease expiry, reconnecting prefill instances that are down.
    caf::reacts_to<tick_atom>,
    // Admin: peers, transfers in flight and blocks held for transfers.
    caf::replies_to<requests_atom>::with<KvTransferView>>;

// A prefill instance's KV transfer actor, published on --kv-port for its decode instances. The messages between
// instances carry only built-in types.
using prefill_kv_actor = kv_transfer_local_actor::extend<
    // Decode -> prefill instance, first of all with --kv-secret: the decode side's nonce; the answer is the
    // prefill side's nonce and its proof (engine/kv_peer_auth.hpp; both empty without a secret).
    caf::replies_to<auth_challenge_atom, std::string>::with<std::string, std::string>,
    // Decode -> prefill instance: the decode side's proof; true when accepted (the peer is then trusted).
    caf::replies_to<auth_proof_atom, std::string>::with<bool>,
    // Decode -> prefill instance: prefill this request (encode_prefill_request) and send its KV to `to` (the
    // decode instance's KV transfer actor).
    caf::reacts_to<prefill_atom, std::string, caf::actor>,
    // Decode -> prefill instance: the request's KV arrived (or was given up on): free its blocks.
    caf::reacts_to<release_atom, std::string>,
    // Decode -> prefill instance: open your end (rank 0) of a device link to `decode` (id: ncclUniqueId bytes,
    // name: one per link ever opened, which headers carry); it replaces an earlier link to that instance.
    caf::reacts_to<link_open_atom, std::string, std::string, caf::actor>,
    // Decode -> prefill instance: its end of this device link broke: this end closes too.
    caf::reacts_to<link_broken_atom, std::string>,
    // Local (scheduler): a handed-off request's payload, its KV not read yet, and its held blocks: the KV is read
    // on the worker and pushed, on the device link to its decode instance if there is one and it takes it (the
    // worker sends it there), else as bytes. A failure frees the blocks (release to the scheduler).
    caf::reacts_to<push_atom, KvTransferPayload, std::vector<int>>,
    // Local (scheduler): the request cannot run here (req id, why).
    caf::reacts_to<refuse_atom, std::string, std::string>>;

// A decode instance's KV transfer actor: it routes prompts to its prefill instances and receives their KV.
using decode_kv_actor = kv_transfer_local_actor::extend<
    // Prefill -> decode instance: a request's KV and first token(s) (encode_kv_transfer).
    caf::reacts_to<kv_atom, std::string>,
    // Prefill -> decode instance: the request could not be prefilled there (req id, why).
    caf::reacts_to<kv_failed_atom, std::string, std::string>,
    // Prefill -> decode instance: this device link broke (a send on it failed): it is closed at both ends, and KV
    // between the two instances goes over TCP until a new link is up (the decode instance opens one a transfer
    // timeout later).
    caf::reacts_to<link_broken_atom, std::string>,
    // Local (scheduler): send this request (req id, encode_prefill_request) to a prefill instance.
    caf::reacts_to<route_atom, std::string, std::string>>;

// What PD adds to the scheduler.
using scheduler_pd_actor = caf::typed_actor<
    // Prefill side (from the KV transfer actor): prefill this request and hand it off after its first token(s).
    caf::reacts_to<prefill_atom, Request>,
    // Prefill side: the decode instance holds the request's KV (or its lease ran out): free its blocks.
    caf::reacts_to<release_atom, std::string>,
    // Decode side: a request's first tokens; its KV is received on the worker (kv_recv, inline or on a device link):
    // land it in the request's blocks, or drop it.
    caf::reacts_to<kv_atom, KvTransferPayload>,
    // Decode side: the request's transfer failed (req id, why): recompute it here or fail it, by policy.
    caf::reacts_to<kv_failed_atom, std::string, std::string>,
    // Prefill role: the KV transfer actor to push hand-offs through (sent once, after spawning both).
    caf::reacts_to<prefill_kv_actor>,
    // Decode role: the KV transfer actor to route prompts through (sent once, after spawning both).
    caf::reacts_to<decode_kv_actor>>;

// What PD adds to the worker: its half of the KV connector (engine/kv_connector_worker.hpp), which moves a request's
// KV inline with its header (as bytes) or on a device link (model/kv_link.hpp); a failure answers with an error.
using worker_pd_actor = caf::typed_actor<
    // A fresh link id, for the other end.
    caf::replies_to<link_id_atom>::with<std::string>,
    // Open this end (link name, id, rank); answered once the other end has joined.
    caf::replies_to<link_open_atom, std::string, std::string, int32_t>::with<bool>,
    // Close a link (replaced, or its peer went down): whatever is in flight on it fails.
    caf::reacts_to<link_close_atom, std::string>,
    // Prefill side: start sending a request's blocks' KV (req id, the link, "" for none, the blocks), which are free
    // again at once; answered with the link it went on and, when that is "" (none, or no staging memory), the KV.
    caf::replies_to<kv_send_atom, std::string, std::string, std::vector<int>>::with<std::string, std::vector<uint8_t>>,
    // Prefill side: answered once the request's send on a link is done (an error if it failed).
    caf::replies_to<kv_sent_atom, std::string>::with<bool>,
    // Decode side: receive a request's KV (req id, the link or "", its size in bytes, the KV that came inline);
    // answered once it is in, to land or drop.
    caf::replies_to<kv_recv_atom, std::string, std::string, int64_t, std::vector<uint8_t>>::with<bool>,
    // Decode side: write the request's received KV into these blocks, before any step sent after it reads them.
    caf::replies_to<kv_land_atom, std::string, std::vector<int>>::with<bool>,
    // Decode side: free a received KV nobody wants.
    caf::reacts_to<kv_drop_atom, std::string>,
    // Local: poll the transfers while any is in flight.
    caf::reacts_to<poll_atom>>;

// What PD adds to the output actor.
using output_pd_actor = caf::typed_actor<
    // The KV transfer actor's counters (PD roles).
    caf::reacts_to<kv_stats_atom, KvTransferStats>>;

// The actors as spawned: one type for every role, the PD messages unused outside PD roles.
using scheduler_actor = scheduler_core_actor::extend_with<scheduler_pd_actor>;
using worker_actor = worker_core_actor::extend_with<worker_pd_actor>;
using output_actor = output_core_actor::extend_with<output_pd_actor>;

}  // namespace parley::msg

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(parley::KvTransferPayload)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(parley::msg::KvTransferStats)
