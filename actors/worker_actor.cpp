// The worker actor: a shell over engine/model_runner.hpp on its own thread (spawned detached), and over
// engine/kv_links.hpp for device links (KV transfers GPU to GPU), whose answers wait for the transfer.
#include <chrono>
#include <functional>
#include <map>

#include "actors/actors.hpp"
#include <spdlog/spdlog.h>

#include "engine/kv_links.hpp"
#include "engine/thread_placement.hpp"

namespace parley {
namespace {

constexpr auto kPollEvery = std::chrono::milliseconds(1);
constexpr const char* kNoLinks = "this instance has no device link transport (--kv-transport nccl)";

struct WorkerState {
  WorkerState() = default;  // not an aggregate: CAF would try to build the state from the actor pointer
  std::unique_ptr<ModelRunner> runner;
  std::unique_ptr<KvLinks> links;                                       // null without a link transport
  std::map<uint64_t, std::function<void(const KvLinkEvent&)>> waiting;  // link tag -> its promise
  std::map<uint64_t, KvLinkEvent> sent;  // sends that finished (or failed) before kv_sent asked
  uint64_t next_tag = 1;
  bool polling = false;
  std::vector<int> compute_cpus;  // pinned to on its first step, from its own thread (its OpenMP team follows)
  bool own_cpus = false;          // no actor thread shares its CPUs: it may spin for a step (wake_atom)
  uint64_t handled = 0;
};
using Self = msg::worker_actor::stateful_pointer<WorkerState>;

template <class T>
caf::result<T> error(const std::string& what) {
  return caf::make_error(caf::sec::runtime_error, what);
}

void keep_polling(Self self) {
  auto& st = self->state;
  if (st.polling || !st.links || !st.links->busy()) return;
  st.polling = true;
  self->delayed_send(self, kPollEvery, msg::poll_atom::value);
}

void poll(Self self) {
  auto& st = self->state;
  st.polling = false;
  for (const KvLinkEvent& e : st.links->poll(now_seconds())) {
    const auto it = st.waiting.find(e.tag);
    if (it == st.waiting.end()) continue;
    auto deliver = std::move(it->second);
    st.waiting.erase(it);
    deliver(e);
  }
  keep_polling(self);
}

// Runs a link operation that answers later: `start(tag)` posts it; the promise gets `done(tag)` or the failure.
template <class T>
caf::result<T> on_link(Self self, const std::function<void(uint64_t)>& start, std::function<T(uint64_t)> done) {
  auto& st = self->state;
  if (!st.links) return error<T>(kNoLinks);
  const uint64_t tag = st.next_tag++;
  try {
    start(tag);
  } catch (const std::exception& e) {
    keep_polling(self);  // a link the failure broke reports what was in flight on it
    return error<T>(e.what());
  }
  auto promise = self->template make_response_promise<T>();
  st.waiting[tag] = [promise, done = std::move(done)](const KvLinkEvent& e) mutable {
    if (e.kind == KvLinkEvent::Kind::Failed)
      promise.deliver(caf::make_error(caf::sec::runtime_error, e.why));
    else
      promise.deliver(done(e.tag));
  };
  keep_polling(self);
  return promise;
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
  if (links) st.links = std::make_unique<KvLinks>(st.runner->device(), std::move(links), link_timeout_s);
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
      [self](msg::export_atom, const std::vector<int>& blocks) -> caf::result<std::vector<uint8_t>> {
        try {
          return self->state.runner->device().export_blocks(blocks);
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, std::string("export KV: ") + e.what());
        }
      },
      [self](msg::import_atom, const std::vector<int>& blocks, const std::vector<uint8_t>& kv) -> caf::result<bool> {
        try {
          self->state.runner->device().import_blocks(blocks, kv);
          return true;
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, std::string("import KV: ") + e.what());
        }
      },
      [self](msg::link_id_atom) -> caf::result<std::string> {
        if (!self->state.links) return error<std::string>(kNoLinks);
        try {
          return self->state.links->new_id();
        } catch (const std::exception& e) {
          return error<std::string>(e.what());
        }
      },
      [self](msg::link_open_atom, const std::string& name, const std::string& id, int32_t rank) -> caf::result<bool> {
        return on_link<bool>(
            self, [&](uint64_t tag) { self->state.links->open(name, id, rank, tag, now_seconds()); },
            [](uint64_t) { return true; });
      },
      [self](msg::link_close_atom, const std::string& name) {
        if (self->state.links) self->state.links->close(name), keep_polling(self);
      },
      [self](msg::kv_send_atom, const std::string& link, const std::vector<int>& blocks) -> caf::result<uint64_t> {
        auto& st = self->state;
        if (!st.links) return error<uint64_t>(kNoLinks);
        const uint64_t tag = st.next_tag++;
        try {
          st.links->send(link, tag, blocks, now_seconds());
        } catch (const KvStagingError&) {
          return uint64_t(0);  // nothing posted, the link is fine: the scheduler sends this KV over TCP
        } catch (const std::exception& e) {
          keep_polling(self);
          return error<uint64_t>(e.what());
        }
        st.waiting[tag] = [self](const KvLinkEvent& e) { self->state.sent[e.tag] = e; };  // until kv_sent asks
        keep_polling(self);
        return tag;
      },
      [self](msg::kv_sent_atom, uint64_t tag) -> caf::result<bool> {
        auto& st = self->state;
        if (const auto done = st.sent.find(tag); done != st.sent.end()) {
          const KvLinkEvent e = done->second;
          st.sent.erase(done);
          if (e.kind == KvLinkEvent::Kind::Failed) return error<bool>(e.why);
          return true;
        }
        if (!st.waiting.count(tag)) return error<bool>("no KV send " + std::to_string(tag));
        auto promise = self->make_response_promise<bool>();
        st.waiting[tag] = [promise](const KvLinkEvent& e) mutable {
          if (e.kind == KvLinkEvent::Kind::Failed)
            promise.deliver(caf::make_error(caf::sec::runtime_error, e.why));
          else
            promise.deliver(true);
        };
        return promise;
      },
      [self](msg::kv_recv_atom, const std::string& link, int64_t words) -> caf::result<uint64_t> {
        return on_link<uint64_t>(
            self, [&](uint64_t tag) { self->state.links->recv(link, tag, words, now_seconds()); },
            [](uint64_t tag) { return tag; });
      },
      [self](msg::kv_land_atom, uint64_t tag, const std::vector<int>& blocks) -> caf::result<bool> {
        try {
          if (!self->state.links) throw std::logic_error(kNoLinks);
          self->state.links->land(tag, blocks);
          return true;
        } catch (const std::exception& e) {
          return error<bool>(std::string("land KV: ") + e.what());
        }
      },
      [self](msg::kv_drop_atom, uint64_t tag) {
        if (self->state.links) self->state.links->drop(tag);
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
