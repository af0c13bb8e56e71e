// Spawn functions of Parley's actors (their behaviours live one per .cpp file). Included only by
// actors/engine.cpp and the actor tests: CAF is heavy.
#pragma once
#include <chrono>
#include <memory>

#include "actors/protocol_pd.hpp"
#include "engine/clock.hpp"
#include "engine/model_runner.hpp"
#include "engine/prefill_router.hpp"
#include "model/kv_link.hpp"

namespace parley {

class OutputService;

// The worker owns the model runner; spawned detached (its own thread), which computes on compute_cpus (empty: where
// the OS puts it). links: how it opens device links for KV transfers (null: none); link_timeout_s bounds a link's
// opening and each transfer on it.
msg::worker_actor spawn_worker(caf::actor_system& sys, std::unique_ptr<ModelRunner> runner,
                               std::shared_ptr<KvLinkFactory> links = nullptr, double link_timeout_s = 30,
                               std::vector<int> compute_cpus = {});
// What the scheduler of a prefill or decode instance needs besides its KV transfer actor (sent to it later).
struct SchedulerPd {
  bool remote_prefill = false;          // decode role: admitted requests are prefilled by prefill instances
  bool recompute_on_kv_failure = true;  // --kv-load-failure-policy recompute (else fail)
  KvLayout layout;                      // the worker's KV layout: transfers in and out use it
};

// async_scheduling: plan step N+1 while the worker runs step N (two steps in flight, not one). profile: where
// each step's time goes (null: not timed).
msg::scheduler_actor spawn_scheduler(caf::actor_system& sys, SchedulerConfig config, bool async_scheduling,
                                     msg::worker_actor worker, msg::output_actor output, SchedulerPd pd = {},
                                     StepProfile* profile = nullptr);
// What both KV transfer actors start from. timeout_s bounds a transfer on the decode side and a lease on the
// prefill side. layout: this instance's KV layout; KV of another arrives as a failed transfer. link_transport:
// the worker's device links ("": none): a decode instance opens one to each prefill instance it reaches, and
// their KV then travels on it. kv_secret: "" trusts every peer; else a peer must authenticate
// (engine/kv_peer_auth.hpp) before it is used.
struct KvTransferSetup {
  msg::scheduler_actor scheduler;
  msg::output_actor output;
  double timeout_s = 30;
  KvLayout layout;
  msg::worker_actor worker;
  std::string link_transport;
  std::string kv_secret;
};
// The KV transfer actor of a prefill instance (published on --kv-port by the caller).
msg::prefill_kv_actor spawn_prefill_kv(caf::actor_system& sys, KvTransferSetup setup);
// The KV transfer actor of a decode instance, which routes prompts to these prefill instances.
msg::decode_kv_actor spawn_decode_kv(caf::actor_system& sys, KvTransferSetup setup, std::vector<PeerAddress> peers,
                                     RoutingPolicy routing);
msg::output_actor spawn_output(caf::actor_system& sys, std::unique_ptr<OutputService> service);
msg::admin_actor spawn_admin(caf::actor_system& sys, msg::scheduler_actor scheduler, msg::worker_actor worker,
                             msg::output_actor output);
// kv: the KV transfer actor of a prefill or decode instance (its view joins /admin/requests), else null.
msg::ingress_actor spawn_ingress(caf::actor_system& sys, msg::scheduler_actor scheduler, msg::output_actor output,
                                 msg::admin_actor admin, msg::kv_transfer_local_actor kv = {});

// Every actor counts what it handles, in one place: its behaviour is built with counted_behavior() and its
// requests' replies arrive through ask(), both of which wrap each handler to count the message first. The
// admin view reads the count (state.handled) with the mailbox depth.
template <class Self>
msg::ActorStats actor_stats(Self* self, const char* name) {
  return {name, self->mailbox().size(), self->state.handled};
}

namespace detail {
// A handler's parameter and result types, to wrap it in a lambda CAF matches exactly as it matched the handler.
template <class F>
struct Handler : Handler<decltype(&F::operator())> {};
template <class C, class R, class... A>
struct Handler<R (C::*)(A...) const> {
  template <class Self, class F>
  static auto counted(Self self, F f) {
    return [self, f = std::move(f)](A... args) mutable -> R {
      ++self->state.handled;
      return f(std::forward<A>(args)...);
    };
  }
};
template <class C, class R, class... A>
struct Handler<R (C::*)(A...)> : Handler<R (C::*)(A...) const> {};  // a mutable lambda
}  // namespace detail

// The handler, counting each message it handles in self->state.handled.
template <class Self, class F>
auto counted(Self self, F f) {
  return detail::Handler<F>::counted(self, std::move(f));
}

// An actor's behaviour whose every handler counts its message.
template <class Self, class... Fs>
typename std::remove_pointer_t<Self>::behavior_type counted_behavior(Self self, Fs... handlers) {
  return {counted(self, std::move(handlers))...};
}

// self->request() whose reply (or error) handlers count the reply as a message handled.
template <class Self, class Handle>
struct CountedReply {
  Self self;
  Handle handle;
  template <class... Fs>
  void then(Fs... handlers) {
    handle.then(counted(self, std::move(handlers))...);
  }
};
template <class Self, class Dest, class Timeout, class... Ts>
auto ask(Self self, const Dest& dest, Timeout timeout, Ts&&... xs) {
  auto handle = self->request(dest, timeout, std::forward<Ts>(xs)...);
  return CountedReply<Self, decltype(handle)>{self, std::move(handle)};
}

}  // namespace parley
