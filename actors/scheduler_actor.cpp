// The scheduler actor: a shell over engine/scheduler.hpp that keeps one step in flight on the worker, or
// two with async scheduling (it plans step N+1 while the worker runs step N).
#include <spdlog/spdlog.h>

#include <deque>
#include <unordered_map>
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
  size_t max_steps_in_flight = 1;   // 2 with async scheduling
  std::deque<uint64_t> steps_in_flight;  // step ids sent to the worker, oldest first
  int pending_stop_checks = 0;  // outputs of requests with stop strings not yet checked by the output actor
  bool lost_step = false;       // a step failed: its placeholders' outputs will never come
  uint64_t handled = 0;
  std::random_device entropy;  // seeds for unseeded requests, drawn at admission
  // PD roles (MISSION C7).
  SchedulerPd pd;
  msg::kv_transfer_actor kv;
  struct HandOff {
    int num_prompt_tokens;
    std::string link;  // the device link its KV goes on ("": as bytes through the KV transfer actor)
  };
  std::unordered_map<std::string, HandOff> handing_off;  // prefill side: ToDecode request id -> where its KV goes
};
using Self = msg::scheduler_actor::stateful_pointer<SchedulerState>;

void send_step(Self self, SchedulerOutput so);
void finish(Self self, const std::vector<std::string>& ids, RequestStatus status);
void send_outputs(Self self, std::vector<EngineCoreOutput> outputs);
void hand_off_kv(Self self, const EngineCoreOutput& handed);
void kv_loaded(Self self, const KvTransferPayload& p);

// Decode side: requests just given blocks for their KV go to a prefill instance (the KV transfer actor routes).
void route_remote_prefills(Self self) {
  auto& st = self->state;
  for (Scheduler::KvReceive& k : st.scheduler->take_kv_receives())
    if (const Request* r = st.scheduler->find(k.req_id)) self->send(st.kv, msg::route_atom::value, k.req_id, encode_prefill_request(*r));
}

// Sends steps to the worker while fewer than the limit are in flight and there is work (or news) for it.
// The worker handles them in order and replies in order, so outputs are folded back in step order.
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

void send_step(Self self, SchedulerOutput so) {
  self->state.steps_in_flight.push_back(so.step_id);
  self->request(self->state.worker, caf::infinite, msg::execute_atom::value, so)
      .then(
          [self, so](const ModelRunnerOutput& mro) {
            auto& st = self->state;
            ++st.handled;  // the worker's reply is a message too
            st.steps_in_flight.pop_front();
            std::vector<EngineCoreOutput> outputs;
            try {
              outputs = st.scheduler->update_from_output(so, mro);
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
            ++self->state.handled;
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
  auto checked = [self, may_stop] {
    self->state.pending_stop_checks -= may_stop;
    maybe_step(self);
  };
  self->request(st.output, caf::infinite, msg::outputs_atom::value, std::move(outputs), st.scheduler->stats())
      .then(
          [self, checked](const std::vector<std::string>& stopped) {
            ++self->state.handled;
            if (!stopped.empty()) finish(self, stopped, RequestStatus::FinishedStopped);
            checked();
          },
          [self, checked](const caf::error& err) {
            ++self->state.handled;
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

// Prefill side: reads the handed-off request's blocks on the worker (after the step that wrote them) and
// gives the KV transfer actor the payload to push; the blocks stay held until the decode side releases them.
// On a device link the worker sends the blocks as it reaches this message (after the step that wrote them) and
// only the header goes to the KV transfer actor, right away: headers leave in the order the sends were posted.
void hand_off_kv(Self self, const EngineCoreOutput& handed) {
  auto& st = self->state;
  const SchedulerState::HandOff to = st.handing_off.at(handed.req_id);
  const int num_prompt_tokens = to.num_prompt_tokens;
  st.handing_off.erase(handed.req_id);
  std::vector<int> blocks = st.scheduler->held_block_ids(handed.req_id);
  if (!to.link.empty()) {
    self->request(st.worker, caf::infinite, msg::kv_send_atom::value, to.link, blocks)
        .then([self](bool) { ++self->state.handled; },
              [self, id = handed.req_id, link = to.link](const caf::error& err) {
                ++self->state.handled;
                spdlog::warn("request {}: sending its KV on device link {} failed: {}", id, link, self->system().render(err));
                auto& st = self->state;
                st.scheduler->release_held(id);
                self->send(st.kv, msg::link_atom::value, link);
                self->send(st.output, msg::stats_atom::value, st.scheduler->stats());
                maybe_step(self);  // the blocks may admit a waiting request
              });
    const KvTransferPayload header{handed.req_id, num_prompt_tokens, handed.new_token_ids, handed.new_logprobs,
                                   st.pd.layout, int(blocks.size()), to.link, {}};
    self->send(st.kv, msg::push_atom::value, handed.req_id, encode_kv_transfer(header), int32_t(blocks.size()), true);
    return;
  }
  self->request(st.worker, caf::infinite, msg::export_atom::value, blocks)
      .then(
          [self, handed, num_prompt_tokens, n = int(blocks.size())](std::vector<float>& kv) {
            ++self->state.handled;
            KvTransferPayload p{handed.req_id, num_prompt_tokens, handed.new_token_ids, handed.new_logprobs,
                                self->state.pd.layout, n, "", std::move(kv)};
            self->send(self->state.kv, msg::push_atom::value, handed.req_id, encode_kv_transfer(p), int32_t(n), false);
          },
          [self, id = handed.req_id](const caf::error& err) {
            ++self->state.handled;
            self->state.scheduler->release_held(id);
            self->send(self->state.kv, msg::refuse_atom::value, id, "reading its KV failed: " + self->system().render(err));
          });
}

// Prefill side: a request routed here by a decode instance.
void admit_for_decode(Self self, Request& r, const std::string& link) {
  auto& st = self->state;
  r.kv_transfer = KvTransfer::ToDecode;
  r.arrival_time = now_seconds();
  const std::string id = r.request_id;
  const int prompt = r.num_prompt_tokens();
  try {
    st.scheduler->add_request(std::move(r));
  } catch (const std::exception& e) {
    self->send(st.kv, msg::refuse_atom::value, id, std::string(e.what()));
    return;
  }
  st.handing_off[id] = {prompt, link};
  self->send(st.output, msg::stats_atom::value, st.scheduler->stats());
  maybe_step(self);
}

// Decode side: a request's transfer failed; by --kv-load-failure-policy it is prefilled here or fails.
void kv_failure(Self self, const std::string& id, const std::string& why) {
  auto& st = self->state;
  const Request* r = st.scheduler->find(id);
  if (!r || r->status != RequestStatus::WaitingForRemoteKv) return;  // finished, aborted or arrived meanwhile
  spdlog::warn("request {}: KV transfer failed ({}); {}", id, why, st.pd.recompute_on_kv_failure ? "prefilling it here" : "failing it");
  auto live = st.scheduler->fail_remote_kv(id, st.pd.recompute_on_kv_failure);
  if (!live.empty())
    self->send(st.output, msg::aborted_atom::value, std::move(live), st.scheduler->stats(),
               "The prefill instance failed this request (" + why + ") and --kv-load-failure-policy is fail.");
  maybe_step(self);
}

// Decode side: whether a transfer's KV fits the request's blocks (the same model and block size, the same prompt).
bool kv_fits(Self self, const KvTransferPayload& p, const Request& r, const std::vector<int>& blocks) {
  return p.layout == self->state.pd.layout && p.num_blocks == int(blocks.size()) && p.num_prompt_tokens == r.num_prompt_tokens();
}

// Decode side: the KV arrived; it is written on the worker before any later step, then the request runs.
void kv_arrived(Self self, KvTransferPayload& p) {
  auto& st = self->state;
  const Request* r = st.scheduler->find(p.req_id);
  if (!r || r->status != RequestStatus::WaitingForRemoteKv) return;  // aborted, or failed over to a local prefill
  std::vector<int> blocks = st.scheduler->kv_cache_manager().block_ids(p.req_id);
  if (!kv_fits(self, p, *r, blocks)) return kv_failure(self, p.req_id, "the KV does not fit this instance (another model or block size)");
  self->request(st.worker, caf::infinite, msg::import_atom::value, std::move(blocks), std::move(p.kv))
      .then([self, p](bool) { kv_loaded(self, p); },
            [self, id = p.req_id](const caf::error& err) {
              ++self->state.handled;
              kv_failure(self, id, "loading it failed: " + self->system().render(err));
            });
}

// Decode side: the KV is in the request's blocks (the worker wrote it before any later step): it runs.
void kv_loaded(Self self, const KvTransferPayload& p) {
  auto& st = self->state;
  ++st.handled;
  const Request* now = st.scheduler->find(p.req_id);
  if (!now || now->status != RequestStatus::WaitingForRemoteKv) return;
  auto outputs = st.scheduler->finish_remote_kv(p.req_id, p.first_token_ids, p.first_logprobs);
  if (!outputs.empty()) send_outputs(self, std::move(outputs));
  self->send(st.output, msg::stats_atom::value, st.scheduler->stats());
  maybe_step(self);
}

// Decode side: a header whose KV follows on the device link it names. The receive is posted whatever became
// of the request, since the link pairs it with the prefill side's send; the data lands in the blocks only if
// the request still waits for it when it is in. A link closed or broken meanwhile fails it (recompute).
void kv_on_link(Self self, KvTransferPayload p) {
  auto& st = self->state;
  const Request* r = st.scheduler->find(p.req_id);
  std::vector<int> blocks;
  if (r && r->status == RequestStatus::WaitingForRemoteKv) {
    blocks = st.scheduler->kv_cache_manager().block_ids(p.req_id);
    if (!kv_fits(self, p, *r, blocks)) {
      blocks.clear();
      kv_failure(self, p.req_id, "the KV does not fit this instance (another model or block size)");
    }
  }
  const int64_t floats = p.layout.floats(p.num_blocks);
  self->request(st.worker, caf::infinite, msg::kv_recv_atom::value, p.kv_link, floats)
      .then(
          [self, p, blocks](uint64_t tag) {
            auto& st = self->state;
            ++st.handled;
            const Request* now = st.scheduler->find(p.req_id);
            if (blocks.empty() || !now || now->status != RequestStatus::WaitingForRemoteKv)
              return self->send(st.worker, msg::kv_drop_atom::value, tag);
            self->request(st.worker, caf::infinite, msg::kv_land_atom::value, tag, blocks)
                .then([self, p](bool) { kv_loaded(self, p); },
                      [self, id = p.req_id](const caf::error& err) {
                        ++self->state.handled;
                        kv_failure(self, id, "loading it failed: " + self->system().render(err));
                      });
          },
          [self, id = p.req_id, link = p.kv_link](const caf::error& err) {
            ++self->state.handled;
            self->send(self->state.kv, msg::link_atom::value, link);
            kv_failure(self, id, "receiving it on the device link failed: " + self->system().render(err));
          });
}

msg::scheduler_actor::behavior_type scheduler_fun(Self self, SchedulerConfig config, bool async_scheduling,
                                                  msg::worker_actor worker, msg::output_actor output, SchedulerPd pd) {
  self->state.scheduler = std::make_unique<Scheduler>(std::move(config));
  self->state.pd = pd;
  self->state.max_steps_in_flight = async_scheduling ? 2 : 1;
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
        const auto& st = self->state;
        reply(admin_requests_json(*st.scheduler, st.max_steps_in_flight > 1, {st.steps_in_flight.begin(), st.steps_in_flight.end()}));
      },
      [self](msg::prefill_atom, Request& r, const std::string& link) {
        ++self->state.handled;
        admit_for_decode(self, r, link);
      },
      [self](msg::release_atom, const std::string& id) {
        ++self->state.handled;
        self->state.scheduler->release_held(id);
        self->send(self->state.output, msg::stats_atom::value, self->state.scheduler->stats());
        maybe_step(self);  // the blocks may admit a waiting request
      },
      [self](msg::kv_atom, KvTransferPayload& p) {
        ++self->state.handled;
        if (p.kv_link.empty()) kv_arrived(self, p);
        else kv_on_link(self, std::move(p));
      },
      [self](msg::kv_failed_atom, const std::string& id, const std::string& why) {
        ++self->state.handled;
        kv_failure(self, id, why);
      },
      [self](msg::kv_transfer_actor kv) {
        ++self->state.handled;
        self->state.kv = std::move(kv);
      },
      [self](msg::stats_atom) { return actor_stats(self, "scheduler", ++self->state.handled); },
  };
}

}  // namespace

msg::scheduler_actor spawn_scheduler(caf::actor_system& sys, SchedulerConfig config, bool async_scheduling,
                                     msg::worker_actor worker, msg::output_actor output, SchedulerPd pd) {
  return sys.spawn(scheduler_fun, std::move(config), async_scheduling, std::move(worker), std::move(output), pd);
}

}  // namespace parley
