// The scheduler actor: a shell over engine/scheduler.hpp that keeps one step in flight on the worker.
#include <spdlog/spdlog.h>

#include <random>

#include "actors/actors.hpp"
#include "actors/admin_view.hpp"

namespace parley {
namespace {

struct SchedulerState {
  SchedulerState() = default;  // not an aggregate: CAF would try to build the state from the actor pointer
  std::unique_ptr<Scheduler> scheduler;
  msg::worker_actor worker;
  msg::output_actor output;
  bool step_in_flight = false;
  uint64_t handled = 0;
  std::random_device entropy;  // seeds for unseeded requests, drawn at admission
};
using Self = msg::scheduler_actor::stateful_pointer<SchedulerState>;

// Starts the next step unless one is running or nothing is left to do (or to tell the worker).
void maybe_step(Self self) {
  auto& st = self->state;
  if (st.step_in_flight || !(st.scheduler->has_unfinished_requests() || st.scheduler->has_pending_finished())) return;
  SchedulerOutput so = st.scheduler->schedule();
  if (so.empty() && so.finished_req_ids.empty() && so.preempted_req_ids.empty()) return;
  st.step_in_flight = true;
  self->request(st.worker, caf::infinite, msg::execute_atom::value, so)
      .then(
          [self, so](const ModelRunnerOutput& mro) {
            auto& st = self->state;
            ++st.handled;  // the worker's reply is a message too
            st.step_in_flight = false;
            auto outputs = st.scheduler->update_from_output(so, mro);
            if (!outputs.empty()) self->send(st.output, msg::outputs_atom::value, std::move(outputs), st.scheduler->stats());
            maybe_step(self);
          },
          [self](const caf::error& err) {
            // A failed step cannot be retried safely: abort everything live so nothing is stuck or leaked.
            auto& st = self->state;
            st.step_in_flight = false;
            spdlog::error("worker step failed: {}; aborting every live request", self->system().render(err));
            std::vector<std::string> ids;
            for (const Request* r : st.scheduler->requests()) ids.push_back(r->request_id);
            auto live = st.scheduler->finish_requests(ids, RequestStatus::FinishedAborted);
            self->send(st.output, msg::aborted_atom::value, std::move(live), st.scheduler->stats());
          });
}

void admit(Self self, msg::Submission& sub) {
  auto& st = self->state;
  Scheduler& sched = *st.scheduler;
  if (sched.num_waiting() + int(sub.requests.size()) > sched.config().max_waiting) {
    spdlog::warn("waiting queue full ({} waiting): refusing {} request(s)", sched.num_waiting(), sub.requests.size());
    sub.sink->on_rejected(503, "The server is overloaded: the waiting queue is full (" +
                                   std::to_string(sched.config().max_waiting) + " requests). Retry later.");
    return;
  }
  const double now = now_seconds();
  std::vector<std::string> added;
  try {
    for (Request& r : sub.requests) {
      // Child i of an n-sample request uses seed + i; unseeded, every child draws its own.
      auto draw = [&] { return uint64_t(st.entropy()) << 32 | st.entropy(); };
      const auto& given = r.sampling_params.seed;
      r.seed = given ? *given : draw();
      r.child_seeds.clear();
      for (size_t i = 0; i < r.child_req_ids.size(); ++i) r.child_seeds.push_back(i == 0 ? r.seed : given ? *given + i : draw());
      r.arrival_time = now;
      sched.add_request(r);
      added.push_back(r.request_id);
      added.insert(added.end(), r.child_req_ids.begin(), r.child_req_ids.end());  // queued separately with the split off
    }
  } catch (const std::exception& e) {
    sched.finish_requests(added, RequestStatus::FinishedAborted);
    sub.sink->on_rejected(dynamic_cast<const Scheduler::QueueFull*>(&e) ? 503 : 400, e.what());
    return;
  }
  for (const Request& r : sub.requests)
    spdlog::debug("request {} admitted: {} prompt tokens, max_tokens {}, seed {}", r.request_id, r.num_prompt_tokens(),
                  r.sampling_params.max_tokens, r.seed);
  sub.sink->on_admitted();
  self->send(st.output, msg::register_atom::value, msg::Registration{std::move(sub.requests), std::move(sub.sink)});
  self->send(st.output, msg::stats_atom::value, sched.stats());
  maybe_step(self);
}

void finish(Self self, const std::vector<std::string>& ids, RequestStatus status) {
  auto& st = self->state;
  auto live = st.scheduler->finish_requests(ids, status);
  for (const auto& id : live) spdlog::info("request {} {}", id, status == RequestStatus::FinishedAborted ? "aborted" : "stopped by a stop string");
  if (status == RequestStatus::FinishedAborted) self->send(st.output, msg::aborted_atom::value, std::move(live), st.scheduler->stats());
  else self->send(st.output, msg::stats_atom::value, st.scheduler->stats());
  maybe_step(self);  // tells the worker to drop their rows
}

msg::scheduler_actor::behavior_type scheduler_fun(Self self, SchedulerConfig config, msg::worker_actor worker,
                                                  msg::output_actor output) {
  self->state.scheduler = std::make_unique<Scheduler>(std::move(config));
  self->state.worker = std::move(worker);
  self->state.output = std::move(output);
  return {
      [self](msg::submit_atom, msg::Submission& sub) {
        ++self->state.handled;
        admit(self, sub);
      },
      [self](msg::abort_atom, const std::vector<std::string>& ids) {
        ++self->state.handled;
        finish(self, ids, RequestStatus::FinishedAborted);
      },
      [self](msg::abort_all_atom) {
        ++self->state.handled;
        std::vector<std::string> ids;
        for (const Request* r : self->state.scheduler->requests()) ids.push_back(r->request_id);
        finish(self, ids, RequestStatus::FinishedAborted);
      },
      [self](msg::requests_atom, const msg::TextReply& reply) {
        ++self->state.handled;
        reply(admin_requests_json(*self->state.scheduler));
      },
      [self](msg::stop_atom, const std::vector<std::string>& ids) {
        ++self->state.handled;
        finish(self, ids, RequestStatus::FinishedStopped);
      },
      [self](msg::stats_atom) { return actor_stats(self, "scheduler", ++self->state.handled); },
  };
}

}  // namespace

msg::scheduler_actor spawn_scheduler(caf::actor_system& sys, SchedulerConfig config, msg::worker_actor worker,
                                     msg::output_actor output) {
  return sys.spawn(scheduler_fun, std::move(config), std::move(worker), std::move(output));
}

}  // namespace parley
