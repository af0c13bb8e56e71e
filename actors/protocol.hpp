// The message protocol between Parley's actors, its core: every typed actor interface a single instance
// needs, one comment per message. Prefill/decode disaggregation adds its messages in protocol_pd.hpp.
//
//   HTTP sessions / generate --(EngineClient)--> ingress --submit/abort--> scheduler --execute--> worker
//   scheduler --register/outputs/aborted/counters--> output (replies to outputs: ids a stop string ended);
//   output --> RequestSink
//   admin --stats--> every actor
//
// A step is schedule -> execute on the worker -> update: the scheduler keeps one step in flight (two with
// async scheduling: it plans step N+1 while the worker runs step N; steps carry their step_id both ways)
// and handles submits and aborts while the worker computes. Message payloads are plain structs from engine/;
// they stay in one process (CAF_ALLOW_UNSAFE_MESSAGE_TYPE). Every atom has one meaning in every interface.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "engine/admin_view.hpp"
#include "engine/engine_client.hpp"
#include "engine/outputs.hpp"
#include "engine/request.hpp"
#include "engine/scheduler.hpp"

namespace parley::msg {

using submit_atom = caf::atom_constant<caf::atom("submit")>;
using abort_atom = caf::atom_constant<caf::atom("abort")>;
using abort_all_atom = caf::atom_constant<caf::atom("abortall")>;
using execute_atom = caf::atom_constant<caf::atom("execute")>;
using wake_atom = caf::atom_constant<caf::atom("wake")>;
using register_atom = caf::atom_constant<caf::atom("register")>;
using outputs_atom = caf::atom_constant<caf::atom("outputs")>;
using aborted_atom = caf::atom_constant<caf::atom("aborted")>;
using counters_atom = caf::atom_constant<caf::atom("counters")>;  // the scheduler's SchedulerStats
using stats_atom = caf::atom_constant<caf::atom("stats")>;        // an actor's own ActorStats, for the admin view
using metrics_atom = caf::atom_constant<caf::atom("metrics")>;
using actors_atom = caf::atom_constant<caf::atom("actors")>;
using requests_atom = caf::atom_constant<caf::atom("requests")>;
using reset_cache_atom = caf::atom_constant<caf::atom("resetcache")>;

// A client request's engine requests, admitted together or not at all.
struct Submission {
  std::vector<Request> requests;
  std::shared_ptr<RequestSink> sink;
};

// What the output actor must know of a request before its first output.
struct Registration {
  std::vector<Request> requests;  // prompt, parameters and arrival time (no tokens yet)
  std::shared_ptr<RequestSink> sink;
};

// An actor's own line in the admin view (mailbox depth and messages handled so far).
using ActorStats = ActorView;

// Reply callbacks from outside the actor system (an HTTP session, a CLI command).
using TextReply = std::function<void(std::string)>;
using ViewReply = std::function<void(EngineView)>;
using ActorsReply = std::function<void(std::vector<ActorView>)>;

// Requests as the scheduler sees them; submit, abort and stop are fire-and-forget.
using scheduler_core_actor = caf::typed_actor<
    // Admit a submission (all or nothing); refusal goes to its sink as 503 or 400.
    caf::reacts_to<submit_atom, Submission>,
    // Abort these requests (client cancel or disconnect); unknown ids are ignored.
    caf::reacts_to<abort_atom, std::vector<std::string>>,
    // Abort every live request (shutdown).
    caf::reacts_to<abort_all_atom>,
    // Admin: every live request (split children with their parent), the block pool and the steps in flight.
    caf::replies_to<requests_atom>::with<EngineView>,
    // Admin: forget every cached prefix; "true", or "false" while a request holds a block (as vLLM).
    caf::reacts_to<reset_cache_atom, TextReply>,
    // Admin: this actor's mailbox depth and messages handled.
    caf::replies_to<stats_atom>::with<ActorStats>>;

// The worker: one per device, detached so compute never blocks another actor's thread.
using worker_core_actor = caf::typed_actor<
    // Run one step: update the persistent batch, forward, sample. Steps run in the order sent; the worker
    // feeds each token it samples into the next step's inputs itself (async scheduling's placeholders).
    // Shared, not copied: the scheduler folds the output back against the same plan.
    caf::replies_to<execute_atom, std::shared_ptr<const SchedulerOutput>>::with<ModelRunnerOutput>,
    // An idle engine took a submission and is planning its first step: a worker on CPUs of its own stays awake
    // for it (spins briefly on its mailbox), so the step does not wait for a sleeping CPU to wake.
    caf::reacts_to<wake_atom>,
    // Admin: mailbox depth and messages handled (answered between steps).
    caf::replies_to<stats_atom>::with<ActorStats>>;

// Output aggregation: detokenizes, applies stop strings, times and counts, and feeds the sinks.
using output_core_actor = caf::typed_actor<
    // Requests admitted by the scheduler, before any of their outputs.
    caf::reacts_to<register_atom, Registration>,
    // One step's news, with the scheduler's counters after it; replies with the ids a stop string ended
    // (the scheduler finishes them, and waits for this reply before planning more when any may stop so).
    caf::replies_to<outputs_atom, std::vector<EngineCoreOutput>, SchedulerStats>::with<std::vector<std::string>>,
    // Requests the scheduler dropped (abort): each live one gets its final `abort` output.
    caf::reacts_to<aborted_atom, std::vector<std::string>, SchedulerStats>,
    // Requests the engine failed (why): each live one ends with that error (503 for its client).
    caf::reacts_to<aborted_atom, std::vector<std::string>, SchedulerStats, std::string>,
    // The scheduler's counters changed without a step (a submit, an abort, a transfer).
    caf::reacts_to<counters_atom, SchedulerStats>,
    // Render /metrics (Prometheus text) and pass it to the callback.
    caf::reacts_to<metrics_atom, TextReply>,
    // Admin: mailbox depth and messages handled.
    caf::replies_to<stats_atom>::with<ActorStats>>;

// The front door used by EngineClient: assigns nothing, forwards in order (so an abort never overtakes
// its submit), and answers metrics/admin queries by asking the actors that know.
using ingress_actor = caf::typed_actor<
    // A client request's engine requests (from an HTTP session or `parley generate`).
    caf::reacts_to<submit_atom, Submission>,
    // Cancel or disconnect.
    caf::reacts_to<abort_atom, std::vector<std::string>>,
    // Shutdown: abort everything live.
    caf::reacts_to<abort_all_atom>,
    // /metrics text.
    caf::reacts_to<metrics_atom, TextReply>,
    // /admin/actors: every actor's line.
    caf::reacts_to<actors_atom, ActorsReply>,
    // /admin/requests: the scheduler's view, with the KV transfer actor's on PD roles.
    caf::reacts_to<requests_atom, ViewReply>,
    // POST /admin/reset-prefix-cache: "true" or "false", from the scheduler.
    caf::reacts_to<reset_cache_atom, TextReply>,
    // Admin: mailbox depth and messages handled.
    caf::replies_to<stats_atom>::with<ActorStats>>;

// The admin actor: collects every actor's stats into one view.
using admin_actor = caf::typed_actor<
    // /admin/actors to the callback; the asker (the ingress) adds its own line.
    caf::reacts_to<actors_atom, ActorStats, ActorsReply>,
    // Its own mailbox depth and messages handled.
    caf::replies_to<stats_atom>::with<ActorStats>>;

}  // namespace parley::msg

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(parley::msg::Submission)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(parley::msg::Registration)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(parley::ActorView)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(parley::EngineView)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(parley::KvTransferView)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(parley::msg::TextReply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(parley::msg::ViewReply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(parley::msg::ActorsReply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<const parley::SchedulerOutput>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(parley::ModelRunnerOutput)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(parley::SchedulerStats)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<parley::EngineCoreOutput>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(parley::Request)
