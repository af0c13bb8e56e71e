#include "actors/data_parallel_engine.hpp"

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "engine/admin_view.hpp"
#include "engine/device_setup.hpp"
#include "http/prometheus.hpp"

namespace parley {
namespace {

// The routing state shared with the sinks: which engine holds each request id, and how many each holds.
struct Routing {
  std::mutex mu;
  std::unordered_map<std::string, size_t> owner;
  std::vector<int> outstanding;
};

// Passes outputs through and forgets each request id once it finished (or the submission was refused).
struct CountingSink : RequestSink {
  std::shared_ptr<RequestSink> inner;
  std::shared_ptr<Routing> routing;
  size_t engine;
  std::vector<std::string> ids;

  void on_admitted() override { inner->on_admitted(); }
  void on_output(const RequestOutput& out) override {
    if (out.finished()) forget({out.req_id});
    inner->on_output(out);
  }
  void on_rejected(int status, const std::string& message) override {
    forget(ids);
    inner->on_rejected(status, message);
  }
  void forget(const std::vector<std::string>& done) {
    std::lock_guard lock(routing->mu);
    for (const std::string& id : done)
      if (routing->owner.erase(id)) --routing->outstanding[engine];
  }
};

// Gathers one reply per engine, then answers with them combined.
template <class T, class Combined>
void gather(const std::vector<std::unique_ptr<EngineClient>>& engines,
            void (EngineClient::*ask)(std::function<void(T)>), std::function<Combined(std::vector<T>&)> combine,
            std::function<void(Combined)> reply) {
  struct Pending {
    std::mutex mu;
    std::vector<T> parts;
    size_t left;
  };
  auto p = std::make_shared<Pending>();
  p->parts.resize(engines.size());
  p->left = engines.size();
  for (size_t e = 0; e < engines.size(); ++e)
    ((*engines[e]).*ask)([p, e, combine, reply](T part) {
      std::unique_lock lock(p->mu);
      p->parts[e] = std::move(part);
      if (--p->left > 0) return;
      lock.unlock();
      reply(combine(p->parts));
    });
}

// Each engine's views, in engine order (each answers a list of one).
template <class View>
std::vector<View> concatenated(std::vector<std::vector<View>>& parts) {
  std::vector<View> all;
  for (auto& views : parts)
    for (View& v : views) all.push_back(std::move(v));
  return all;
}

class DataParallelEngine final : public EngineClient {
 public:
  DataParallelEngine(const EngineConfig& config, int replicas, const EngineStarter& start_one) {
    for (int i = 0; i < replicas; ++i) engines_.push_back(start_one(replica_config(config, i, replicas)));
    routing_->outstanding.assign(engines_.size(), 0);
  }
  ~DataParallelEngine() override { shutdown(); }

  void submit(std::vector<EngineRequestSpec> specs, std::shared_ptr<RequestSink> sink) override {
    auto counting = std::make_shared<CountingSink>();
    for (const EngineRequestSpec& s : specs) {
      if (s.child_req_ids.empty()) counting->ids.push_back(s.req_id);
      counting->ids.insert(counting->ids.end(), s.child_req_ids.begin(), s.child_req_ids.end());
    }
    size_t engine = 0;
    {
      std::lock_guard lock(routing_->mu);
      for (size_t e = 1; e < engines_.size(); ++e)
        if (routing_->outstanding[e] < routing_->outstanding[engine]) engine = e;
      for (const std::string& id : counting->ids)
        if (routing_->owner.emplace(id, engine).second) ++routing_->outstanding[engine];
    }
    counting->inner = std::move(sink), counting->routing = routing_, counting->engine = engine;
    engines_[engine]->submit(std::move(specs), std::move(counting));
  }
  void abort(std::vector<std::string> req_ids) override {
    std::vector<std::vector<std::string>> per(engines_.size());
    {
      std::lock_guard lock(routing_->mu);
      for (std::string& id : req_ids)
        if (auto it = routing_->owner.find(id); it != routing_->owner.end()) per[it->second].push_back(std::move(id));
    }
    for (size_t e = 0; e < engines_.size(); ++e)
      if (!per[e].empty()) engines_[e]->abort(std::move(per[e]));
  }
  void abort_all() override {
    for (auto& e : engines_) e->abort_all();
  }
  void metrics(std::function<void(std::string)> reply) override {
    gather<std::string, std::string>(
        engines_, &EngineClient::metrics,
        [](std::vector<std::string>& texts) { return prom::merge_engine_metrics(texts); }, std::move(reply));
  }
  void admin_actors(std::function<void(std::vector<std::vector<ActorView>>)> reply) override {
    using Lines = std::vector<std::vector<ActorView>>;
    gather<Lines, Lines>(engines_, &EngineClient::admin_actors, concatenated<std::vector<ActorView>>, std::move(reply));
  }
  void admin_requests(std::function<void(std::vector<EngineView>)> reply) override {
    using Views = std::vector<EngineView>;
    gather<Views, Views>(engines_, &EngineClient::admin_requests, concatenated<EngineView>, std::move(reply));
  }
  void reset_prefix_cache(std::function<void(bool)> reply) override {
    auto left = std::make_shared<std::atomic<int>>(int(engines_.size()));
    auto all = std::make_shared<std::atomic<bool>>(true);
    for (auto& e : engines_)
      e->reset_prefix_cache([left, all, reply](bool done) {
        if (!done) *all = false;
        if (--*left == 0) reply(*all);
      });
  }
  void shutdown() override {
    for (auto& e : engines_) e->shutdown();
  }

  const Tokenizer& tokenizer() const override { return engines_[0]->tokenizer(); }
  const std::string& model_name() const override { return engines_[0]->model_name(); }
  int max_model_len() const override { return engines_[0]->max_model_len(); }
  const LlamaConfig& model_config() const override { return engines_[0]->model_config(); }
  const std::string& chat_template() const override { return engines_[0]->chat_template(); }
  std::vector<int> eos_token_ids() const override { return engines_[0]->eos_token_ids(); }
  int max_n() const override { return engines_[0]->max_n(); }
  std::vector<int> service_cpus() const override { return engines_[0]->service_cpus(); }  // the same for each

 private:
  std::vector<std::unique_ptr<EngineClient>> engines_;
  std::shared_ptr<Routing> routing_ = std::make_shared<Routing>();
};

}  // namespace

std::unique_ptr<EngineClient> start_data_parallel(const EngineConfig& config, int replicas,
                                                  const EngineStarter& start_one) {
  if (replicas < 1) throw std::invalid_argument("--data-parallel-size must be at least 1");
  if (replicas == 1) return start_one(config);
  if (config.role != Role::Colocated)
    throw std::invalid_argument(
        "data parallelism (--data-parallel-size, several --devices) runs with --role colocated only");
  return std::make_unique<DataParallelEngine>(config, replicas, start_one);
}

}  // namespace parley
