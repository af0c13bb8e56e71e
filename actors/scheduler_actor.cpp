// The scheduler actor: a shell over StepPipeline (engine/step_pipeline.hpp) that sends its plans to the worker
// actor, one step in flight or two with async scheduling, and folds the replies back in order. Its
// prefill/decode side is scheduler_pd.cpp.
#include <spdlog/spdlog.h>

#include "engine/admin_view.hpp"
#include "actors/scheduler_state.hpp"

namespace parley::scheduling {

void send_step(Self self, StepPipeline::Plan plan);
void finish(Self self, const std::vector<std::string>& ids, RequestStatus status);

// The worker handles steps in order and replies in order, so outputs are folded back in step order.
void maybe_step(Self self) {
  while (StepPipeline::Plan plan = self->state.pipeline->next_step()) send_step(self, std::move(plan));
  route_remote_prefills(self);
}

// A few of the failed requests' ids, for a log line (ids are bounded in length at the ingress).
std::string some_ids(const std::vector<EngineCoreOutput>& failed) {
  std::string out;
  for (size_t i = 0; i < failed.size() && i < 4; ++i) out += (i ? ", " : " (") + failed[i].req_id;
  return failed.empty() ? out : out + (failed.size() > 4 ? ", ...)" : ")");
}

// What a step's fold-back gave: outputs to the output actor, or, for a lost step, every live request aborted.
void deliver(Self self, StepPipeline::Folded folded) {
  auto& st = self->state;
  if (!folded.error.empty())
    spdlog::error("engine step lost: {}; failed {} request(s){}; recomputing the other {} live ones", folded.error,
                  folded.outputs.size(), some_ids(folded.outputs), st.pipeline->live_request_ids().size());
  // Prefill side: a hand-off's first token(s) travel with its KV, not to this instance's output actor.
  for (KvConnectorScheduler::HandOff& handed : st.connector->take_hand_offs(folded.outputs))
    hand_off_kv(self, std::move(handed));
  if (!folded.outputs.empty()) send_outputs(self, std::move(folded.outputs));
  maybe_step(self);
  // Idle now: the counters after a step without news (a discarded token) still reach /metrics.
  if (!st.pipeline->has_steps_in_flight()) report_counters(self);
}

void send_step(Self self, StepPipeline::Plan plan) {
  if (StepProfile* profile = self->state.scheduler().profile())
    profile->sent(StepProfile::Hop::ToWorker, plan->step_id);
  ask(self, self->state.worker, caf::infinite, msg::execute_atom::value, std::move(plan))
      .then(
          [self](const ModelRunnerOutput& mro) {
            StepProfile* profile = self->state.scheduler().profile();
            if (profile) profile->received(StepProfile::Hop::ToScheduler, mro.step_id, StepPhase::HopToScheduler);
            PhaseTimer timer(profile, StepPhase::SchedulerCpu, PhaseTimer::Clock::ThreadCpu);
            deliver(self, self->state.pipeline->fold(mro));
          },
          [self](const caf::error& err) { deliver(self, self->state.pipeline->fail(self->system().render(err))); });
}

void report_counters(Self self) {
  self->send(self->state.output, msg::counters_atom::value, self->state.scheduler().stats());
}

// Hands a step's outputs to the output actor, which answers with the ids a stop string ended. When any of
// them may end so, no step is planned until the answer (StepPipeline's stop gate).
void send_outputs(Self self, std::vector<EngineCoreOutput> outputs) {
  auto& st = self->state;
  const bool may_stop = st.pipeline->may_stop(outputs);
  if (may_stop) st.pipeline->stop_check_sent();
  if (StepProfile* profile = st.scheduler().profile()) profile->sent(StepProfile::Hop::ToOutput, ++st.outputs_sent);
  auto checked = [self, may_stop] {
    if (may_stop) self->state.pipeline->stop_check_done();
    maybe_step(self);
  };
  ask(self, st.output, caf::infinite, msg::outputs_atom::value, std::move(outputs), st.scheduler().stats())
      .then(
          [self, checked](const std::vector<std::string>& stopped) {
            PhaseTimer timer(self->state.scheduler().profile(), StepPhase::SchedulerCpu, PhaseTimer::Clock::ThreadCpu);
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
  if (StepProfile* profile = st.scheduler().profile()) profile->admitting(StepProfile::now());
  if (!st.pipeline->has_steps_in_flight()) self->send(st.worker, msg::wake_atom::value);  // wakes while we plan
  const auto refusal =
      st.pipeline->admit(sub.requests, now_seconds(), st.remote_prefill ? KvTransfer::FromPrefill : KvTransfer::None);
  if (refusal) {
    if (refusal->status == 503) spdlog::warn("refusing {} request(s): {}", sub.requests.size(), refusal->message);
    sub.sink->on_rejected(refusal->status, refusal->message);
    return;
  }
  for (const Request& r : sub.requests)
    spdlog::debug("request {} admitted: {} prompt tokens, max_tokens {}, seed {}", r.request_id, r.num_prompt_tokens(),
                  r.sampling_params.max_tokens, r.seed);
  maybe_step(self);  // first: the step is on its way before the bookkeeping (the output actor hears of it in time)
  sub.sink->on_admitted();
  self->send(st.output, msg::register_atom::value, msg::Registration{std::move(sub.requests), std::move(sub.sink)});
  report_counters(self);
}

void finish(Self self, const std::vector<std::string>& ids, RequestStatus status) {
  auto& st = self->state;
  auto live = st.pipeline->finish(ids, status);
  for (const auto& id : live)
    spdlog::info("request {} {}", id,
                 status == RequestStatus::FinishedAborted ? "aborted" : "stopped by a stop string");
  if (status == RequestStatus::FinishedAborted)
    self->send(st.output, msg::aborted_atom::value, std::move(live), st.scheduler().stats());
  else
    report_counters(self);
  maybe_step(self);  // tells the worker to drop their rows
}

msg::scheduler_actor::behavior_type scheduler_fun(Self self, SchedulerConfig config, bool async_scheduling,
                                                  msg::worker_actor worker, msg::output_actor output, SchedulerPd pd,
                                                  StepProfile* profile) {
  self->state.pipeline = std::make_unique<StepPipeline>(std::move(config), async_scheduling);
  self->state.scheduler().set_profile(profile);
  self->state.remote_prefill = pd.remote_prefill;
  self->state.connector =
      std::make_unique<KvConnectorScheduler>(self->state.scheduler(), pd.layout, pd.recompute_on_kv_failure);
  self->state.worker = std::move(worker);
  self->state.output = std::move(output);
  return counted_behavior(
      self, [self](msg::submit_atom, msg::Submission& sub) { admit(self, sub); },
      [self](msg::abort_atom, const std::vector<std::string>& ids) {
        finish(self, ids, RequestStatus::FinishedAborted);
      },
      [self](msg::abort_all_atom) {
        finish(self, self->state.pipeline->live_request_ids(), RequestStatus::FinishedAborted);
      },
      [self](msg::requests_atom) {
        const auto& st = self->state;
        return admin_view(st.pipeline->scheduler(), st.pipeline->async_scheduling(), st.pipeline->steps_in_flight());
      },
      [self](msg::reset_cache_atom, const msg::TextReply& reply) {
        reply(self->state.scheduler().reset_prefix_cache() ? "true" : "false");
      },
      [self](msg::prefill_atom, Request& r) { admit_for_decode(self, r); },
      [self](msg::release_atom, const std::string& id) {
        self->state.scheduler().release_held(id);
        report_counters(self);
        maybe_step(self);  // the blocks may admit a waiting request
      },
      [self](msg::kv_atom, const KvTransferPayload& p) { kv_received(self, p); },
      [self](msg::kv_failed_atom, const std::string& id, const std::string& why) { kv_failure(self, id, why); },
      [self](msg::prefill_kv_actor kv) { self->state.prefill_kv = std::move(kv); },
      [self](msg::decode_kv_actor kv) { self->state.decode_kv = std::move(kv); },
      [self](msg::stats_atom) { return actor_stats(self, "scheduler"); });
}

}  // namespace parley::scheduling

namespace parley {

msg::scheduler_actor spawn_scheduler(caf::actor_system& sys, SchedulerConfig config, bool async_scheduling,
                                     msg::worker_actor worker, msg::output_actor output, SchedulerPd pd,
                                     StepProfile* profile) {
  return sys.spawn(scheduling::scheduler_fun, std::move(config), async_scheduling, std::move(worker), std::move(output),
                   pd, profile);
}

}  // namespace parley
