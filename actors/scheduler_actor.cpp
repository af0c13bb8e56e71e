// The scheduler actor: a shell over engine/scheduler.hpp that keeps one step in flight on the worker, or
// two with async scheduling (it plans step N+1 while the worker runs step N). Its prefill/decode side is
// scheduler_pd.cpp.
#include <spdlog/spdlog.h>

#include "actors/admin_view.hpp"
#include "actors/scheduler_state.hpp"

namespace parley::scheduling {

void send_step(Self self, SchedulerOutput so);
void finish(Self self, const std::vector<std::string>& ids, RequestStatus status);

// The worker handles steps in order and replies in order, so outputs are folded back in step order.
void maybe_step(Self self) {
  auto& st = self->state;
  if (st.pending_stop_checks > 0) return;  // a stop string may end a request: plan no step it would waste
  while (st.steps_in_flight.size() < st.max_steps_in_flight &&
         (st.scheduler->has_unfinished_requests() || st.scheduler->has_pending_finished())) {
    SchedulerOutput so = st.scheduler->schedule();
    route_remote_prefills(self);
    if (!so.has_work()) return;
    send_step(self, std::move(so));
  }
}

// A failed step (or one whose output does not fit the plan) cannot be retried safely: abort everything
// live so nothing is stuck or leaked.
void fail_all(Self self, const std::string& why) {
  auto& st = self->state;
  spdlog::error("worker step failed: {}; aborting every live request", why);
  std::vector<std::string> ids;
  for (const Request* r : st.scheduler->requests()) ids.push_back(r->request_id);
  auto live = st.scheduler->finish_requests(ids, RequestStatus::FinishedAborted);
  self->send(st.output, msg::aborted_atom::value, std::move(live), st.scheduler->stats());
}

// Once nothing is in flight after a failed step, the outputs it owed the scheduler are forgotten.
void forget_lost_outputs(Self self) {
  auto& st = self->state;
  if (!st.lost_step || !st.steps_in_flight.empty()) return;
  st.scheduler->forget_stale_outputs();
  st.lost_step = false;
}

void send_step(Self self, SchedulerOutput plan) {
  auto so = std::make_shared<const SchedulerOutput>(std::move(plan));
  self->state.steps_in_flight.push_back(so->step_id);
  if (StepProfile* profile = self->state.scheduler->profile()) profile->sent(StepProfile::Hop::ToWorker, so->step_id);
  ask(self, self->state.worker, caf::infinite, msg::execute_atom::value, so)
      .then(
          [self, so](const ModelRunnerOutput& mro) {
            auto& st = self->state;
            StepProfile* profile = st.scheduler->profile();
            if (profile) profile->received(StepProfile::Hop::ToScheduler, mro.step_id, StepPhase::HopToScheduler);
            PhaseTimer timer(profile, StepPhase::SchedulerCpu, PhaseTimer::Clock::ThreadCpu);
            st.steps_in_flight.pop_front();
            std::vector<EngineCoreOutput> outputs;
            try {
              outputs = st.scheduler->update_from_output(*so, mro);
            } catch (const std::exception& e) {
              st.lost_step = true;  // folded back only in part
              fail_all(self, e.what());
              return forget_lost_outputs(self);
            }
            // Prefill side: a hand-off's first token(s) travel with its KV, not to this instance's output actor.
            std::erase_if(outputs, [&](const EngineCoreOutput& o) {
              if (!st.handing_off.count(o.req_id)) return false;
              hand_off_kv(self, o);
              return true;
            });
            if (!outputs.empty()) send_outputs(self, std::move(outputs));
            forget_lost_outputs(self);
            maybe_step(self);
            // Idle now: the counters after a step without news (a discarded token) still reach /metrics.
            if (st.steps_in_flight.empty()) self->send(st.output, msg::stats_atom::value, st.scheduler->stats());
          },
          [self](const caf::error& err) {
            self->state.steps_in_flight.pop_front();
            self->state.lost_step = true;
            fail_all(self, self->system().render(err));
            forget_lost_outputs(self);
          });
}

// Hands a step's outputs to the output actor, which answers with the ids a stop string ended. When any of
// them may end so, no step is planned until the answer: at most the step already in flight is wasted.
void send_outputs(Self self, std::vector<EngineCoreOutput> outputs) {
  auto& st = self->state;
  bool may_stop = false;
  for (const EngineCoreOutput& o : outputs)
    if (const Request* r = st.scheduler->find(o.req_id); r && !r->sampling_params.stop.empty()) may_stop = true;
  st.pending_stop_checks += may_stop;
  if (StepProfile* profile = st.scheduler->profile()) profile->sent(StepProfile::Hop::ToOutput, ++st.outputs_sent);
  auto checked = [self, may_stop] {
    self->state.pending_stop_checks -= may_stop;
    maybe_step(self);
  };
  ask(self, st.output, caf::infinite, msg::outputs_atom::value, std::move(outputs), st.scheduler->stats())
      .then(
          [self, checked](const std::vector<std::string>& stopped) {
            PhaseTimer timer(self->state.scheduler->profile(), StepPhase::SchedulerCpu, PhaseTimer::Clock::ThreadCpu);
            if (!stopped.empty()) finish(self, stopped, RequestStatus::FinishedStopped);
            checked();
          },
          [self, checked](const caf::error& err) {
            spdlog::error("output actor failed: {}", self->system().render(err));
            checked();
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
      if (st.pd.remote_prefill) r.kv_transfer = KvTransfer::FromPrefill;
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

msg::scheduler_actor::behavior_type scheduler_fun(Self self, SchedulerConfig config, bool async_scheduling,
                                                  msg::worker_actor worker, msg::output_actor output, SchedulerPd pd,
                                                  StepProfile* profile) {
  self->state.scheduler = std::make_unique<Scheduler>(std::move(config));
  self->state.scheduler->set_profile(profile);
  self->state.pd = pd;
  self->state.max_steps_in_flight = async_scheduling ? 2 : 1;
  self->state.worker = std::move(worker);
  self->state.output = std::move(output);
  return counted_behavior(self,
      [self](msg::submit_atom, msg::Submission& sub) {
        admit(self, sub);
      },
      [self](msg::abort_atom, const std::vector<std::string>& ids) {
        finish(self, ids, RequestStatus::FinishedAborted);
      },
      [self](msg::abort_all_atom) {
        std::vector<std::string> ids;
        for (const Request* r : self->state.scheduler->requests()) ids.push_back(r->request_id);
        finish(self, ids, RequestStatus::FinishedAborted);
      },
      [self](msg::requests_atom, const msg::TextReply& reply) {
        const auto& st = self->state;
        reply(admin_requests_json(*st.scheduler, st.max_steps_in_flight > 1, {st.steps_in_flight.begin(), st.steps_in_flight.end()}));
      },
      [self](msg::reset_cache_atom, const msg::TextReply& reply) {
        reply(self->state.scheduler->reset_prefix_cache() ? "true" : "false");
      },
      [self](msg::prefill_atom, Request& r, const std::string& link) {
        admit_for_decode(self, r, link);
      },
      [self](msg::release_atom, const std::string& id) {
        self->state.scheduler->release_held(id);
        self->send(self->state.output, msg::stats_atom::value, self->state.scheduler->stats());
        maybe_step(self);  // the blocks may admit a waiting request
      },
      [self](msg::kv_atom, KvTransferPayload& p) {
        kv_received(self, p);
      },
      [self](msg::kv_failed_atom, const std::string& id, const std::string& why) {
        kv_failure(self, id, why);
      },
      [self](msg::kv_transfer_actor kv) {
        self->state.kv = std::move(kv);
      },
      [self](msg::stats_atom) { return actor_stats(self, "scheduler"); }
  );
}

}  // namespace parley::scheduling

namespace parley {

msg::scheduler_actor spawn_scheduler(caf::actor_system& sys, SchedulerConfig config, bool async_scheduling,
                                     msg::worker_actor worker, msg::output_actor output, SchedulerPd pd, StepProfile* profile) {
  return sys.spawn(scheduling::scheduler_fun, std::move(config), async_scheduling, std::move(worker), std::move(output), pd,
                   profile);
}

}  // namespace parley
