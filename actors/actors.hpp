// Spawn functions of Parley's actors (their behaviours live one per .cpp file). Included only by
// actors/engine.cpp and the actor tests: CAF is heavy.
#pragma once
#include <chrono>
#include <memory>

#include "actors/protocol.hpp"
#include "engine/model_runner.hpp"

namespace parley {

class OutputService;

// The worker owns the model runner; spawned detached (its own thread).
msg::worker_actor spawn_worker(caf::actor_system& sys, std::unique_ptr<ModelRunner> runner);
// async_scheduling: plan step N+1 while the worker runs step N (two steps in flight, not one).
msg::scheduler_actor spawn_scheduler(caf::actor_system& sys, SchedulerConfig config, bool async_scheduling,
                                     msg::worker_actor worker, msg::output_actor output);
msg::output_actor spawn_output(caf::actor_system& sys, std::unique_ptr<OutputService> service);
msg::admin_actor spawn_admin(caf::actor_system& sys, msg::scheduler_actor scheduler, msg::worker_actor worker,
                             msg::output_actor output);
msg::ingress_actor spawn_ingress(caf::actor_system& sys, msg::scheduler_actor scheduler, msg::output_actor output,
                                 msg::admin_actor admin);

// Seconds on the steady clock: request arrival and token times share this origin.
inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Every actor counts what it handles; the admin view reads it with the mailbox depth.
template <class Self>
msg::ActorStats actor_stats(Self* self, const char* name, uint64_t handled) {
  return {name, self->mailbox().size(), handled};
}

}  // namespace parley
