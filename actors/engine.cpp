// EngineClient over the actor system: loads the model, spawns worker, output, scheduler, admin and
// ingress, and turns calls from other threads into messages to the ingress.
#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <caf/io/all.hpp>

#include "actors/actors.hpp"
#include "actors/data_parallel_engine.hpp"
#include "actors/output_service.hpp"
#include "engine/device_setup.hpp"
#include "engine/kv_peer_auth.hpp"
#include "engine/loaded_engine.hpp"
#include "engine/thread_placement.hpp"
#include "model/cuda/cuda_model.hpp"

namespace parley {
namespace {

// The PD flags, checked together.
struct Pd {
  Role role;
  std::vector<PeerAddress> peers;
  RoutingPolicy routing = RoutingPolicy::RoundRobin;
  std::string kv_secret;  // --kv-secret's file read
};

Pd check_pd(const EngineConfig& c) {
  Pd pd{c.role, {}, c.prefill_routing, ""};
  if (!(c.kv_transfer_timeout_s > 0)) throw std::invalid_argument("--kv-transfer-timeout must be positive");
  for (const std::string& p : c.prefill_peers) pd.peers.push_back(PeerAddress::parse(p));
  if (c.role == Role::Decode && pd.peers.empty())
    throw std::invalid_argument("--role decode needs --prefill-peers host:port,...");
  if (c.role != Role::Decode && !pd.peers.empty())
    throw std::invalid_argument("--prefill-peers applies only to --role decode");
  if (c.kv_port < 0 || c.kv_port > 65535)
    throw std::invalid_argument("--kv-port must be in 0..65535 (0: any free port)");
  if (c.role != Role::Prefill && c.kv_port != 0)
    throw std::invalid_argument("--kv-port applies only to --role prefill");
  if (c.role != Role::Prefill && !c.kv_host.empty())
    throw std::invalid_argument("--kv-host applies only to --role prefill");
  if (c.role == Role::Colocated && !c.kv_secret_file.empty())
    throw std::invalid_argument("--kv-secret applies only to --role prefill or decode");
  if (!c.kv_secret_file.empty()) pd.kv_secret = read_kv_secret(c.kv_secret_file);
  // Flags of another role are refused rather than ignored (a value equal to the default cannot be told apart).
  if (c.role != Role::Decode && (c.prefill_routing != RoutingPolicy::RoundRobin || !c.kv_recompute_on_failure))
    throw std::invalid_argument("--prefill-routing and --kv-load-failure-policy apply only to --role decode");
  if (c.role == Role::Colocated && c.kv_transfer_timeout_s != EngineConfig{}.kv_transfer_timeout_s)
    throw std::invalid_argument("--kv-transfer-timeout applies only to --role prefill or decode");
  if (c.role == Role::Colocated && (c.kv_transport != KvTransport::Tcp || c.kv_link_factory))
    throw std::invalid_argument("--kv-transport applies only to --role prefill or decode");
  if (c.kv_transport == KvTransport::Nccl && c.device != DeviceKind::Cuda)
    throw std::invalid_argument("--kv-transport nccl moves KV between GPUs: it needs --device cuda");
  return pd;
}

// The event-based actors (ingress, scheduler, output, admin, kv transfer) share CAF's threads; the worker computes
// on its own (detached). Work sharing: an idle CAF thread blocks on a condition variable and a message wakes it,
// where CAF's default work stealing polls, sleeping 50 us between polls for 25 ms after each message (a hop waits
// for the sleep to end, and the wake-ups take cores from compute). One thread colocated: the scheduler and output
// actors' work is small and serial; two for PD roles, whose KV encoding would delay a step.
void configure_actor_threads(caf::actor_system_config& system_config, Role role) {
  system_config.set("scheduler.policy", caf::atom("sharing"));
  system_config.set("scheduler.max-threads", size_t(role == Role::Colocated ? 1 : 2));
}

// Pins every thread CAF starts to the actor threads' CPUs (the worker moves to its own on its first step).
class PinActorThreads final : public caf::thread_hook {
 public:
  explicit PinActorThreads(std::vector<int> cpus) : cpus_(std::move(cpus)) {}
  void init(caf::actor_system&) override {}
  void thread_started() override {
    if (!pin_this_thread(cpus_)) spdlog::warn("an actor thread could not be pinned to its CPUs");
  }
  void thread_terminates() override {}

 private:
  std::vector<int> cpus_;
};

// --cpu-affinity auto: the compute threads (the CPU backend's, or the one that drives a GPU) on CPUs of their
// own, when some are left for the actor threads.
ThreadPlacement placement_for(const EngineConfig& c, int compute_threads) {
  if (c.cpu_affinity == CpuAffinity::Off) return {};
  return place_threads(allowed_cpus(), compute_threads, c.data_parallel_rank, c.data_parallel_engines);
}

class ActorEngine final : public EngineClient {
 public:
  explicit ActorEngine(const EngineConfig& config) : engine_(config), max_n_(config.max_n), profile_(config.profile) {
    const Pd pd = check_pd(config);
    const LlamaConfig& m = engine_.file.config;
    const DeviceModel& device = engine_.parts.runner->device();
    const std::string device_name = device.device_name();
    const SchedulerPd scheduler_pd{pd.role == Role::Decode,
                                   config.kv_recompute_on_failure,
                                   {KvCacheLayout::for_model(m).slots_per_block, m.kv_dim(),
                                    engine_.parts.scheduler_config.block_size, device.kv_dtype()}};
    const ThreadPlacement placement = start_actor_system(config, pd.role);
    std::shared_ptr<KvLinkFactory> links = config.kv_link_factory;
    if (!links && config.kv_transport == KvTransport::Nccl)
      links = cuda::nccl_link_factory(config.devices.empty() ? 0 : config.devices[0]);
    worker_ =
        spawn_worker(*system_, std::move(engine_.parts.runner), links, config.kv_transfer_timeout_s, placement.compute);
    auto output_service = std::make_unique<OutputService>(engine_.tokenizer, engine_.model_name);
    output_service->set_profile(profile_.get());
    output_ = spawn_output(*system_, std::move(output_service));
    scheduler_ = spawn_scheduler(*system_, engine_.parts.scheduler_config, config.async_scheduling, worker_, output_,
                                 scheduler_pd, profile_.get());
    admin_ = spawn_admin(*system_, scheduler_, worker_, output_);
    const KvTransferSetup kv_setup{scheduler_,          output_, config.kv_transfer_timeout_s,
                                   scheduler_pd.layout, worker_, links ? links->transport() : "",
                                   pd.kv_secret};
    if (pd.role == Role::Prefill) {
      const msg::prefill_kv_actor prefill = spawn_prefill_kv(*system_, kv_setup);
      caf::anon_send(scheduler_, prefill);
      kv_ = prefill;
      publish_kv_transfer(prefill, config);
    } else if (pd.role == Role::Decode) {
      const msg::decode_kv_actor decode = spawn_decode_kv(*system_, kv_setup, pd.peers, pd.routing);
      caf::anon_send(scheduler_, decode);
      kv_ = decode;
    }
    ingress_ = spawn_ingress(*system_, scheduler_, output_, admin_, kv_);
    log_engine_up(config, pd.role, links ? " (KV over " + links->transport() + ")" : "", device_name);
  }
  ~ActorEngine() override { shutdown(); }

  void submit(std::vector<EngineRequestSpec> specs, std::shared_ptr<RequestSink> sink) override {
    msg::Submission sub;
    for (auto& s : specs) {
      sub.requests.emplace_back(std::move(s.req_id), std::move(s.prompt_token_ids), std::move(s.params), 0);
      sub.requests.back().child_req_ids = std::move(s.child_req_ids);
      sub.requests.back().pooling_params = s.pooling;
    }
    sub.sink = std::move(sink);
    caf::anon_send(ingress_, msg::submit_atom::value, std::move(sub));
  }
  void abort(std::vector<std::string> req_ids) override {
    caf::anon_send(ingress_, msg::abort_atom::value, std::move(req_ids));
  }
  void abort_all() override { caf::anon_send(ingress_, msg::abort_all_atom::value); }
  void metrics(std::function<void(std::string)> reply) override {
    caf::anon_send(ingress_, msg::metrics_atom::value, msg::TextReply(std::move(reply)));
  }
  void admin_actors(std::function<void(std::vector<std::vector<ActorView>>)> reply) override {
    caf::anon_send(ingress_, msg::actors_atom::value,
                   msg::ActorsReply([reply](std::vector<ActorView> lines) { reply({std::move(lines)}); }));
  }
  void admin_requests(std::function<void(std::vector<EngineView>)> reply) override {
    caf::anon_send(ingress_, msg::requests_atom::value,
                   msg::ViewReply([reply](EngineView view) { reply({std::move(view)}); }));
  }
  void reset_prefix_cache(std::function<void(bool)> reply) override {
    caf::anon_send(ingress_, msg::reset_cache_atom::value,
                   msg::TextReply([reply](std::string done) { reply(done == "true"); }));
  }
  void shutdown() override {
    if (!system_) return;
    for (const caf::actor& a : {caf::actor_cast<caf::actor>(ingress_), caf::actor_cast<caf::actor>(admin_),
                                caf::actor_cast<caf::actor>(kv_), caf::actor_cast<caf::actor>(scheduler_),
                                caf::actor_cast<caf::actor>(output_), caf::actor_cast<caf::actor>(worker_)})
      if (a) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    kv_ = msg::kv_transfer_local_actor{};
    ingress_ = msg::ingress_actor{};
    admin_ = msg::admin_actor{};
    scheduler_ = msg::scheduler_actor{};
    output_ = msg::output_actor{};
    worker_ = msg::worker_actor{};
    system_->await_all_actors_done();
    system_.reset();
  }

  const Tokenizer& tokenizer() const override { return engine_.tokenizer; }
  const std::string& model_name() const override { return engine_.model_name; }
  int max_model_len() const override { return engine_.parts.scheduler_config.max_model_len; }
  const LlamaConfig& model_config() const override { return engine_.file.config; }
  const std::string& chat_template() const override { return engine_.file.chat_template; }
  std::vector<int> eos_token_ids() const override { return engine_.parts.scheduler_config.eos_token_ids; }
  int max_n() const override { return max_n_; }
  std::vector<int> service_cpus() const override { return service_cpus_; }

 private:
  // CAF's threads (pinned apart from the compute threads where --cpu-affinity allows) and the system on them.
  ThreadPlacement start_actor_system(const EngineConfig& config, Role role) {
    if (role != Role::Colocated) system_config_.load<caf::io::middleman>();  // CAF's remote actors
    configure_actor_threads(system_config_, role);
    const bool cuda = config.device == DeviceKind::Cuda;
    const ThreadPlacement placement = placement_for(config, cuda ? 1 : engine_.backend.threads());
    if (placement.pinned()) {
      service_cpus_ = placement.service;
      system_config_.add_thread_hook<PinActorThreads>(placement.service);
      spdlog::info("thread affinity: the worker computes on CPUs {}, the actor threads run on CPUs {}",
                   fmt::join(placement.compute, ","), fmt::join(placement.service, ","));
    }
    system_ = std::make_unique<caf::actor_system>(system_config_);
    return placement;
  }

  // A prefill instance's KV transfer actor, reachable by its decode instances on --kv-host:--kv-port.
  void publish_kv_transfer(const msg::prefill_kv_actor& kv, const EngineConfig& config) {
    auto port = system_->middleman().publish(kv, uint16_t(config.kv_port),
                                             config.kv_host.empty() ? nullptr : config.kv_host.c_str(), true);
    if (!port) {
      const std::string why = system_->render(port.error());
      shutdown();
      throw std::runtime_error("cannot publish the KV transfer actor on port " + std::to_string(config.kv_port) + ": " +
                               why);
    }
    spdlog::info("prefill instance: KV transfer actor published on port {}", *port);
    const bool loopback = config.kv_host == "127.0.0.1" || config.kv_host == "::1" || config.kv_host == "localhost";
    if (config.kv_secret_file.empty() && !loopback)
      spdlog::warn(
          "the KV port {} on {} accepts prompts and KV from any peer that reaches it: set --kv-secret FILE "
          "on the prefill and decode instances (docs/pd.md, threat model)",
          *port, config.kv_host.empty() ? "every interface" : config.kv_host);
  }

  void log_engine_up(const EngineConfig& config, Role role, const std::string& kv_links, const std::string& device) {
    const LlamaConfig& m = engine_.file.config;
    const SchedulerConfig& sc = engine_.parts.scheduler_config;
    spdlog::info(
        "engine up: model {} ({} layers, dim {}, vocab {}), context {}, {} KV blocks of {} tokens, "
        "max {} seqs, {} batched tokens, async scheduling {}, speculation {}, role {}{}, device {}",
        engine_.model_name, m.n_layers, m.dim, m.vocab_size, sc.max_model_len, sc.num_kv_blocks, sc.block_size,
        sc.max_num_seqs, sc.max_num_batched_tokens, config.async_scheduling ? "on" : "off",
        config.speculative ? config.speculative->method_name() + " k=" + std::to_string(sc.num_speculative_tokens)
                           : "off",
        name_of(role), kv_links, device);
  }

  LoadedEngine engine_;
  int max_n_;
  std::vector<int> service_cpus_;           // where the actor threads run (empty: not pinned)
  std::shared_ptr<StepProfile> profile_;    // the actors write to it: it outlives them
  caf::actor_system_config system_config_;  // the system keeps a reference: it must outlive it
  std::unique_ptr<caf::actor_system> system_;
  msg::worker_actor worker_;
  msg::output_actor output_;
  msg::scheduler_actor scheduler_;
  msg::admin_actor admin_;
  msg::ingress_actor ingress_;
  msg::kv_transfer_local_actor kv_;  // PD roles only
};

}  // namespace

std::unique_ptr<EngineClient> EngineClient::start(const EngineConfig& config) {
  check_device_flags(config);
  return start_data_parallel(
      config, data_parallel_engines(config),
      [](const EngineConfig& c) -> std::unique_ptr<EngineClient> { return std::make_unique<ActorEngine>(c); });
}

}  // namespace parley
