// The ingress actor (the engine's front door) and the admin actor (the live view of every actor).
#include <chrono>

#include "actors/actors.hpp"

namespace parley {
namespace {

struct IngressState {
  IngressState() = default;  // not an aggregate: CAF would try to build the state from the actor pointer
  msg::scheduler_actor scheduler;
  msg::output_actor output;
  msg::admin_actor admin;
  msg::kv_transfer_local_actor kv;  // PD roles only
  uint64_t handled = 0;
};
using IngressSelf = msg::ingress_actor::stateful_pointer<IngressState>;

msg::ingress_actor::behavior_type ingress_fun(IngressSelf self, msg::scheduler_actor scheduler,
                                              msg::output_actor output, msg::admin_actor admin,
                                              msg::kv_transfer_local_actor kv) {
  self->state.scheduler = std::move(scheduler);
  self->state.output = std::move(output);
  self->state.admin = std::move(admin);
  self->state.kv = std::move(kv);
  return counted_behavior(
      self,
      // Submits and aborts share one path to the scheduler, so an abort never overtakes its submit.
      [self](msg::submit_atom, msg::Submission& sub) {
        self->send(self->state.scheduler, msg::submit_atom::value, std::move(sub));
      },
      [self](msg::abort_atom, std::vector<std::string>& ids) {
        self->send(self->state.scheduler, msg::abort_atom::value, std::move(ids));
      },
      [self](msg::abort_all_atom) { self->send(self->state.scheduler, msg::abort_all_atom::value); },
      [self](msg::metrics_atom, msg::TextReply& reply) {
        self->send(self->state.output, msg::metrics_atom::value, std::move(reply));
      },
      [self](msg::actors_atom, msg::ActorsReply& reply) {
        self->send(self->state.admin, msg::actors_atom::value, actor_stats(self, "ingress"), std::move(reply));
      },
      [self](msg::requests_atom, msg::ViewReply& reply) {
        ask(self, self->state.scheduler, caf::infinite, msg::requests_atom::value)
            .then([self, reply](const EngineView& view) {
              if (!self->state.kv) return reply(view);
              // PD roles: with the KV transfer actor's peers and transfers in flight.
              ask(self, self->state.kv, caf::infinite, msg::requests_atom::value)
                  .then([reply, view](const KvTransferView& kv) {
                    EngineView both = view;
                    both.kv_transfer = kv;
                    reply(std::move(both));
                  });
            });
      },
      [self](msg::reset_cache_atom, msg::TextReply& reply) {
        self->send(self->state.scheduler, msg::reset_cache_atom::value, std::move(reply));
      },
      [self](msg::stats_atom) { return actor_stats(self, "ingress"); });
}

struct AdminState {
  AdminState() = default;  // not an aggregate: CAF would try to build the state from the actor pointer
  msg::scheduler_actor scheduler;
  msg::worker_actor worker;
  msg::output_actor output;
  uint64_t handled = 0;
};
using AdminSelf = msg::admin_actor::stateful_pointer<AdminState>;

// Gathers the replies of one /admin/actors query; answers when the last arrives (or fails).
struct ActorsQuery {
  std::vector<ActorView> lines;
  int pending = 0;
  msg::ActorsReply reply;
  void add(ActorView line) {
    lines.push_back(std::move(line));
    if (--pending == 0) reply(std::move(lines));
  }
};

msg::admin_actor::behavior_type admin_fun(AdminSelf self, msg::scheduler_actor scheduler, msg::worker_actor worker,
                                          msg::output_actor output) {
  self->state.scheduler = std::move(scheduler);
  self->state.worker = std::move(worker);
  self->state.output = std::move(output);
  return counted_behavior(
      self,
      [self](msg::actors_atom, const msg::ActorStats& asker, msg::ActorsReply& reply) {
        auto& st = self->state;
        auto query = std::make_shared<ActorsQuery>();
        query->reply = std::move(reply);
        query->pending = 3;
        query->lines.push_back(asker);
        query->lines.push_back(actor_stats(self, "admin"));
        // The worker answers between steps; a step longer than the timeout shows as "busy".
        const auto timeout = std::chrono::seconds(2);
        auto ask_stats = [&](const auto& who, const char* name) {
          ask(self, who, timeout, msg::stats_atom::value)
              .then([query](const msg::ActorStats& s) { query->add(s); },
                    [query, name](const caf::error&) {
                      query->add({name, std::nullopt, std::nullopt});
                    });
        };
        ask_stats(st.scheduler, "scheduler");
        ask_stats(st.worker, "worker");
        ask_stats(st.output, "output");
      },
      [self](msg::stats_atom) { return actor_stats(self, "admin"); });
}

}  // namespace

msg::admin_actor spawn_admin(caf::actor_system& sys, msg::scheduler_actor scheduler, msg::worker_actor worker,
                             msg::output_actor output) {
  return sys.spawn(admin_fun, std::move(scheduler), std::move(worker), std::move(output));
}

msg::ingress_actor spawn_ingress(caf::actor_system& sys, msg::scheduler_actor scheduler, msg::output_actor output,
                                 msg::admin_actor admin, msg::kv_transfer_local_actor kv) {
  return sys.spawn(ingress_fun, std::move(scheduler), std::move(output), std::move(admin), std::move(kv));
}

}  // namespace parley
