// The worker actor: a shell over engine/model_runner.hpp on its own thread (spawned detached), and over its half of
// the KV connector (engine/kv_connector_worker.hpp), whose answers wait for the transfer.
#include <chrono>
#include <functional>

#include "actors/actors.hpp"
#include <spdlog/spdlog.h>

#include "engine/kv_connector_worker.hpp"
#include "engine/thread_placement.hpp"

namespace parley {
namespace {

constexpr auto kPollEvery = std::chrono::milliseconds(1);

struct WorkerState {
  WorkerState() = default;  // not an aggregate: CAF would try to build the state from the actor pointer
  std::unique_ptr<ModelRunner> runner;
  std::unique_ptr<KvConnectorWorker> kv;
  std::vector<int> compute_cpus;  // pinned to on its first step, from its own thread (its OpenMP team follows)
  bool own_cpus = false;          // no actor thread shares its CPUs: it may spin for a step (wake_atom)
  uint64_t handled = 0;
};
using Self = msg::worker_actor::stateful_pointer<WorkerState>;

caf::error failure(const std::string& what) { return caf::make_error(caf::sec::runtime_error, what); }

// Runs a connector operation: a poll is pending exactly while the connector is busy, so one that makes it busy
// schedules the first (each poll schedules the next while it stays busy).
template <class F>
auto on_connector(Self self, F&& operation) -> decltype(operation(*self->state.kv)) {
  KvConnectorWorker& kv = *self->state.kv;
  const bool was_busy = kv.busy();
  struct KeepPolling {
    Self self;
    bool was_busy;
    ~KeepPolling() {
      if (!was_busy && self->state.kv->busy()) self->delayed_send(self, kPollEvery, msg::poll_atom::value);
    }
  } keep_polling{self, was_busy};
  return operation(kv);
}

// The connector operation's value, or its exception as the error answer.
template <class F>
auto answer(Self self, const char* what, F&& operation) -> caf::result<decltype(operation(*self->state.kv))> {
  try {
    return on_connector(self, std::forward<F>(operation));
  } catch (const std::exception& e) {
    return failure(what + std::string(e.what()));
  }
}

// Answered once the connector's operation finishes: `value`, or what failed.
template <class T, class F>
caf::result<T> answer_when_done(Self self, T value, F&& start) {
  auto promise = self->make_response_promise<T>();
  auto done = [promise, value](const std::string& error) mutable {
    if (error.empty())
      promise.deliver(value);
    else
      promise.deliver(failure(error));
  };
  try {
    on_connector(self, [&](KvConnectorWorker& kv) { start(kv, std::move(done)); });
  } catch (const std::exception& e) {
    promise.deliver(failure(e.what()));
  }
  return promise;
}

void poll(Self self) {
  self->state.kv->get_finished(now_seconds());
  if (self->state.kv->busy()) self->delayed_send(self, kPollEvery, msg::poll_atom::value);
}

// How long the worker spins for the step an idle engine is planning (wake_atom). Planning takes 20-150 us;
// waking a sleeping CPU took 50-90 us on the 2-vCPU machines measured (bench_async_scheduling's idle line).
constexpr auto kWakeSpin = std::chrono::microseconds(500);

msg::worker_actor::behavior_type worker_fun(Self self, std::shared_ptr<std::unique_ptr<ModelRunner>> runner,
                                            std::shared_ptr<KvLinkFactory> links, double link_timeout_s,
                                            std::vector<int> compute_cpus) {
  auto& st = self->state;
  st.runner = std::move(*runner);
  st.own_cpus = !compute_cpus.empty();
  st.compute_cpus = std::move(compute_cpus);
  st.kv = std::make_unique<KvConnectorWorker>(
      make_kv_transfer_backends(st.runner->device(), std::move(links), link_timeout_s));
  return counted_behavior(
      self,
      [self](msg::execute_atom, const std::shared_ptr<const SchedulerOutput>& so) -> caf::result<ModelRunnerOutput> {
        if (auto& cpus = self->state.compute_cpus; !cpus.empty()) {
          if (!pin_this_thread(cpus)) spdlog::warn("the worker could not be pinned to its CPUs");
          cpus.clear();
        }
        StepProfile* profile = self->state.runner->profile();
        if (profile) profile->worker_starts(so->step_id);
        try {
          ModelRunnerOutput out = self->state.runner->execute_model(*so);
          if (profile) profile->worker_ends(so->step_id);
          return out;
        } catch (const std::exception& e) {
          return failed_step(so->step_id, e);  // the scheduler resynchronises (StepPipeline::fold)
        }
      },
      [self](msg::wake_atom) {
        // Spinning where an actor thread may need the CPU would delay the very step it waits for.
        if (self->state.own_cpus) spin_until([self] { return !self->mailbox().empty(); }, kWakeSpin);
      },
      [self](msg::link_id_atom) { return answer(self, "", [](KvConnectorWorker& kv) { return kv.new_link_id(); }); },
      [self](msg::link_open_atom, const std::string& name, const std::string& id, int32_t rank) {
        return answer_when_done(self, true, [&](KvConnectorWorker& kv, auto done) {
          kv.open_link(name, id, rank, now_seconds(), std::move(done));
        });
      },
      [self](msg::link_close_atom, const std::string& name) {
        on_connector(self, [&](KvConnectorWorker& kv) { kv.close_link(name); });
      },
      [self](msg::kv_send_atom, const std::string& req_id, const std::string& link,
             const std::vector<int>& blocks) -> caf::result<std::string, std::vector<uint8_t>> {
        try {
          auto started = on_connector(
              self, [&](KvConnectorWorker& kv) { return kv.start_send(req_id, link, blocks, now_seconds()); });
          return {std::move(started.link), std::move(started.inline_kv)};
        } catch (const std::exception& e) {
          return failure("send KV: " + std::string(e.what()));
        }
      },
      [self](msg::kv_sent_atom, const std::string& req_id) {
        return answer_when_done(self, true, [&](KvConnectorWorker& kv, auto done) { kv.when_sent(req_id, done); });
      },
      [self](msg::kv_recv_atom, const std::string& req_id, const std::string& link, int64_t num_bytes,
             std::vector<uint8_t>& inline_kv) {
        return answer_when_done(self, true, [&](KvConnectorWorker& kv, auto done) {
          kv.start_recv(req_id, link, num_bytes, std::move(inline_kv), now_seconds(), std::move(done));
        });
      },
      [self](msg::kv_land_atom, const std::string& req_id, const std::vector<int>& blocks) {
        return answer(self, "land KV: ", [&](KvConnectorWorker& kv) { return kv.land(req_id, blocks), true; });
      },
      [self](msg::kv_drop_atom, const std::string& req_id) {
        on_connector(self, [&](KvConnectorWorker& kv) { kv.drop(req_id); });
      },
      [self](msg::poll_atom) { poll(self); }, [self](msg::stats_atom) { return actor_stats(self, "worker"); });
}

}  // namespace

msg::worker_actor spawn_worker(caf::actor_system& sys, std::unique_ptr<ModelRunner> runner,
                               std::shared_ptr<KvLinkFactory> links, double link_timeout_s,
                               std::vector<int> compute_cpus) {
  // The runner travels in a shared_ptr: spawn arguments must be copyable.
  auto holder = std::make_shared<std::unique_ptr<ModelRunner>>(std::move(runner));
  return sys.spawn<caf::detached>(worker_fun, holder, std::move(links), link_timeout_s, std::move(compute_cpus));
}

}  // namespace parley
