// The output actor: a shell over actors/output_service.hpp.
#include <chrono>

#include "actors/actors.hpp"
#include "actors/output_service.hpp"

namespace parley {
namespace {

struct OutputState {
  OutputState() = default;  // not an aggregate: CAF would try to build the state from the actor pointer
  std::unique_ptr<OutputService> service;
  uint64_t handled = 0;
};
using Self = msg::output_actor::stateful_pointer<OutputState>;

msg::output_actor::behavior_type output_fun(Self self, std::shared_ptr<std::unique_ptr<OutputService>> service) {
  self->state.service = std::move(*service);
  return counted_behavior(
      self,
      [self](msg::register_atom, const msg::Registration& reg) {
        auto& st = self->state;
        st.service->register_requests(reg.requests, reg.sink, now_seconds());
      },
      [self](msg::outputs_atom, const std::vector<EngineCoreOutput>& outputs,
             const SchedulerStats& stats) -> std::vector<std::string> {
        auto& st = self->state;
        st.service->on_stats(stats);
        return st.service->on_outputs(outputs, now_seconds());
      },
      [self](msg::aborted_atom, const std::vector<std::string>& ids, const SchedulerStats& stats) {
        self->state.service->on_stats(stats);
        self->state.service->on_aborted(ids, now_seconds());
      },
      [self](msg::aborted_atom, const std::vector<std::string>& ids, const SchedulerStats& stats,
             const std::string& error) {
        self->state.service->on_stats(stats);
        self->state.service->on_aborted(ids, now_seconds(), error);
      },
      [self](msg::counters_atom, const SchedulerStats& stats) { self->state.service->on_stats(stats); },
      [self](msg::kv_stats_atom, const msg::KvTransferStats& kv) {
        self->state.service->on_kv_transfers(kv.blocks, kv.bytes, kv.failures, kv.auth_failures, kv.latencies);
      },
      [self](msg::metrics_atom, const msg::TextReply& reply) { reply(self->state.service->render_metrics()); },
      [self](msg::stats_atom) { return actor_stats(self, "output"); });
}

}  // namespace

msg::output_actor spawn_output(caf::actor_system& sys, std::unique_ptr<OutputService> service) {
  auto holder = std::make_shared<std::unique_ptr<OutputService>>(std::move(service));
  return sys.spawn(output_fun, holder);
}

}  // namespace parley
