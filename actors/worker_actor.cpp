// The worker actor: a shell over engine/model_runner.hpp on its own thread (spawned detached).
#include "actors/actors.hpp"

namespace parley {
namespace {

struct WorkerState {
  WorkerState() = default;  // not an aggregate: CAF would try to build the state from the actor pointer
  std::unique_ptr<ModelRunner> runner;
  uint64_t handled = 0;
};
using Self = msg::worker_actor::stateful_pointer<WorkerState>;

msg::worker_actor::behavior_type worker_fun(Self self, std::shared_ptr<std::unique_ptr<ModelRunner>> runner) {
  self->state.runner = std::move(*runner);
  return {
      [self](msg::execute_atom, const SchedulerOutput& so) -> caf::result<ModelRunnerOutput> {
        ++self->state.handled;
        try {
          return self->state.runner->execute_model(so);
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, std::string("execute_model: ") + e.what());
        }
      },
      [self](msg::export_atom, const std::vector<int>& blocks) -> caf::result<std::vector<float>> {
        ++self->state.handled;
        try {
          return self->state.runner->device().export_blocks(blocks);
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, std::string("export KV: ") + e.what());
        }
      },
      [self](msg::import_atom, const std::vector<int>& blocks, const std::vector<float>& kv) -> caf::result<bool> {
        ++self->state.handled;
        try {
          self->state.runner->device().import_blocks(blocks, kv);
          return true;
        } catch (const std::exception& e) {
          return caf::make_error(caf::sec::runtime_error, std::string("import KV: ") + e.what());
        }
      },
      [self](msg::stats_atom) { return actor_stats(self, "worker", ++self->state.handled); },
  };
}

}  // namespace

msg::worker_actor spawn_worker(caf::actor_system& sys, std::unique_ptr<ModelRunner> runner) {
  // The runner travels in a shared_ptr: spawn arguments must be copyable.
  auto holder = std::make_shared<std::unique_ptr<ModelRunner>>(std::move(runner));
  return sys.spawn<caf::detached>(worker_fun, holder);
}

}  // namespace parley
