// EngineClient over the actor system: loads the model, spawns worker, output, scheduler, admin and
// ingress, and turns calls from other threads into messages to the ingress.
#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <caf/io/all.hpp>

#include <filesystem>

#include "actors/actors.hpp"
#include "actors/data_parallel_engine.hpp"
#include "actors/device_setup.hpp"
#include "actors/output_service.hpp"
#include "engine/engine_core.hpp"
#include "engine/kv_peer_auth.hpp"
#include "engine/thread_placement.hpp"
#include "engine/structured_output/structured_output_manager.hpp"
#include "kernels/cpu/ops.hpp"
#include "model/cuda/cuda_model.hpp"
#include "model/model_source.hpp"

namespace parley {
namespace {

// A block holds the layers of one KV group (model/kv_cache_layout.hpp); a draft's cache gives each layer a slot.
int64_t kv_bytes_per_block(const LlamaConfig& m, int slots, int block_size, KvDtype dtype) {
  return 2 * int64_t(slots) * m.kv_dim() * block_size * kv_dtype_bytes(dtype);  // 16-bit types hold twice the blocks
}

// Blocks for the KV cache: the explicit count, else what the memory size holds, else enough for
// max_num_seqs full contexts capped at 1 GiB. A draft model's (or MTP head's) KV has a block of its own per block id.
int resolve_num_kv_blocks(const EngineConfig& c, const SchedulerConfig& sc, const LlamaConfig& m) {
  const int bs = sc.block_size;
  const KvDtype dt = kv_dtype_for(c.kv_cache_dtype, c.device);
  if (bs < 1) throw std::invalid_argument("--block-size must be at least 1");
  if (sc.num_kv_blocks > 0) return sc.num_kv_blocks;
  const KvCacheLayout layout = KvCacheLayout::for_model(m);
  int64_t bytes_per_block = kv_bytes_per_block(m, layout.slots_per_block, bs, dt);
  if (c.speculative && c.speculative->method == SpecMethod::Mtp)
    bytes_per_block += kv_bytes_per_block(m, 1, bs, dt);  // the head's one layer
  if (c.speculative && c.speculative->method == SpecMethod::DraftModel) try {
      const LlamaConfig draft = load_model_config(c.speculative->model);
      bytes_per_block += kv_bytes_per_block(draft, draft.n_layers, bs, dt);
    } catch (const std::runtime_error& e) {
      throw std::invalid_argument(std::string("--speculative-config: draft model: ") + e.what());
    }
  int64_t bytes = c.kv_cache_memory_bytes;
  if (bytes == 0) {
    const int64_t full =
        int64_t(sc.max_num_seqs) * ((sc.max_model_len + bs - 1) / bs) * layout.num_groups() * bytes_per_block;
    bytes = std::min<int64_t>(full, int64_t(1) << 30);
  }
  const int64_t blocks = bytes / bytes_per_block;
  if (blocks < 1)
    throw std::invalid_argument("the KV cache memory holds no block of " + std::to_string(bytes_per_block) + " bytes");
  return int(std::min<int64_t>(blocks, 1 << 24));
}

// The PD flags, checked together.
struct Pd {
  Role role;
  std::vector<PeerAddress> peers;
  RoutingPolicy routing = RoutingPolicy::RoundRobin;
  std::string kv_secret;  // --kv-secret's file read
};

Pd check_pd(const EngineConfig& c) {
  Pd pd{c.role, {}, RoutingPolicy::RoundRobin, ""};
  if (c.prefill_routing == "least_loaded")
    pd.routing = RoutingPolicy::LeastLoaded;
  else if (c.prefill_routing != "round_robin")
    throw std::invalid_argument("--prefill-routing must be round_robin or least_loaded, got '" + c.prefill_routing +
                                "'");
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
  if (c.role != Role::Decode && (c.prefill_routing != "round_robin" || !c.kv_recompute_on_failure))
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

std::string model_name_of(const EngineConfig& c) {
  if (!c.served_model_name.empty()) return c.served_model_name;
  if (c.model_path.empty()) return "parley-builtin";
  return std::filesystem::path(c.model_path).stem().string();
}

class ActorEngine final : public EngineClient {
 public:
  explicit ActorEngine(const EngineConfig& config)
      : file_(load_model_with_vocab(config.model_path, config.tokenizer_path)),
        tokenizer_(*file_.vocab),
        backend_(config.threads, cpu::parse_isa(config.isa)),
        model_name_(model_name_of(config)),
        chat_template_(file_.chat_template) {
    check_device_flags(config);
    const bool cuda = config.device == DeviceKind::Cuda;
    // The served config says what the engine does: a pooling type embeds, None generates.
    file_.config.pooling = served_pooling(config.task, config.pooling, file_.config.pooling);
    if (file_.config.pooling != PoolingType::None && (cuda || config.role != Role::Colocated))
      throw std::invalid_argument("--task embed runs on --device cpu in a colocated instance only for now");
    SchedulerConfig sc = config.scheduler;
    sc.pooling = file_.config.pooling;
    if (sc.max_model_len <= 0 || sc.max_model_len > file_.config.max_seq_len)
      sc.max_model_len = file_.config.max_seq_len;
    // On a GPU the blocks fill what --gpu-memory-utilization leaves, unless a count or size is given.
    const bool blocks_given = sc.num_kv_blocks > 0 || config.kv_cache_memory_bytes > 0;
    sc.num_kv_blocks = !cuda || blocks_given ? resolve_num_kv_blocks(config, sc, file_.config) : 0;
    sc.eos_token_ids = default_stop_token_ids(tokenizer_.vocab());
    sc.vocab_size = file_.config.vocab_size;
    sc = with_speculation(sc, config.speculative);
    std::unique_ptr<DeviceModel> device;
    if (cuda) {
      device = make_cuda_device_model(config, file_, sc, sc.num_kv_blocks);
      sc.num_kv_blocks = device->num_blocks();
      // Its logits buffers hold a row per sequence (and draft), not one per prompt token.
      sc.prompt_logprobs_refusal =
          "prompt_logprobs (and echo with logprobs) are not supported with --device cuda yet: "
          "they need a logits row per prompt token";
    }
    sc.validate();
    max_model_len_ = sc.max_model_len;
    if (config.max_n < 1 || config.max_n > 128) throw std::invalid_argument("--max-n must be in [1, 128]");
    max_n_ = config.max_n;
    eos_ = sc.eos_token_ids;
    if (!cuda) {
      model_ = std::make_unique<LlamaModel>(file_.config, std::move(file_.weights), backend_);
      device = std::make_unique<CpuDeviceModel>(*model_, sc.num_kv_blocks, sc.block_size,
                                                kv_dtype_for(config.kv_cache_dtype, DeviceKind::Cpu));
    }
    file_.weights = {};  // on the device now (or moved into the CPU model)
    sc.kv_group_windows = device->kv_layout().group_windows();
    const std::string device_name = device->device_name();
    const KvDtype kv_dtype = device->kv_dtype();
    auto runner = std::make_unique<ModelRunner>(std::move(device), sc.max_num_seqs, eos_);
    runner->set_structured_output(std::make_shared<structured::StructuredOutputManager>(
        std::make_shared<const structured::GrammarVocabulary>(tokenizer_)));
    profile_ = config.profile;
    runner->set_profile(profile_.get());
    if (config.speculative)
      runner->set_proposer(
          make_proposer(*config.speculative, runner->proposer_target(sc.max_model_len, &tokenizer_.vocab())),
          config.speculative->verify);
    const Pd pd = check_pd(config);
    if (pd.role != Role::Colocated) system_config_.load<caf::io::middleman>();  // CAF's remote actors
    const SchedulerPd scheduler_pd{
        pd.role == Role::Decode,
        config.kv_recompute_on_failure,
        {KvCacheLayout::for_model(file_.config).slots_per_block, file_.config.kv_dim(), sc.block_size, kv_dtype}};
    configure_actor_threads(system_config_, pd.role);
    const ThreadPlacement placement = placement_for(config, cuda ? 1 : backend_.threads());
    if (placement.pinned()) {
      service_cpus_ = placement.service;
      system_config_.add_thread_hook<PinActorThreads>(placement.service);
      spdlog::info("thread affinity: the worker computes on CPUs {}, the actor threads run on CPUs {}",
                   fmt::join(placement.compute, ","), fmt::join(placement.service, ","));
    }
    system_ = std::make_unique<caf::actor_system>(system_config_);
    std::shared_ptr<KvLinkFactory> links = config.kv_link_factory;
    if (!links && config.kv_transport == KvTransport::Nccl)
      links = cuda::nccl_link_factory(config.devices.empty() ? 0 : config.devices[0]);
    worker_ = spawn_worker(*system_, std::move(runner), links, config.kv_transfer_timeout_s, placement.compute);
    auto output_service = std::make_unique<OutputService>(tokenizer_, model_name_);
    output_service->set_profile(profile_.get());
    output_ = spawn_output(*system_, std::move(output_service));
    scheduler_ = spawn_scheduler(*system_, sc, config.async_scheduling, worker_, output_, scheduler_pd, profile_.get());
    admin_ = spawn_admin(*system_, scheduler_, worker_, output_);
    if (pd.role != Role::Colocated) {
      kv_ = spawn_kv_transfer(*system_, scheduler_, output_, pd.peers, pd.routing, config.kv_transfer_timeout_s,
                              scheduler_pd.layout, worker_, links ? links->transport() : "", pd.kv_secret);
      caf::anon_send(scheduler_, kv_);
    }
    if (pd.role == Role::Prefill) {
      auto port = system_->middleman().publish(kv_, uint16_t(config.kv_port),
                                               config.kv_host.empty() ? nullptr : config.kv_host.c_str(), true);
      if (!port) {
        const std::string why = system_->render(port.error());
        shutdown();
        throw std::runtime_error("cannot publish the KV transfer actor on port " + std::to_string(config.kv_port) +
                                 ": " + why);
      }
      spdlog::info("prefill instance: KV transfer actor published on port {}", *port);
      const bool loopback = config.kv_host == "127.0.0.1" || config.kv_host == "::1" || config.kv_host == "localhost";
      if (config.kv_secret_file.empty() && !loopback)
        spdlog::warn(
            "the KV port {} on {} accepts prompts and KV from any peer that reaches it: set --kv-secret FILE "
            "on the prefill and decode instances (docs/pd.md, threat model)",
            *port, config.kv_host.empty() ? "every interface" : config.kv_host);
    }
    ingress_ = spawn_ingress(*system_, scheduler_, output_, admin_, kv_);
    spdlog::info(
        "engine up: model {} ({} layers, dim {}, vocab {}), context {}, {} KV blocks of {} tokens, "
        "max {} seqs, {} batched tokens, async scheduling {}, speculation {}, role {}{}, device {}",
        model_name_, file_.config.n_layers, file_.config.dim, file_.config.vocab_size, max_model_len_, sc.num_kv_blocks,
        sc.block_size, sc.max_num_seqs, sc.max_num_batched_tokens, config.async_scheduling ? "on" : "off",
        config.speculative ? config.speculative->method_name() + " k=" + std::to_string(sc.num_speculative_tokens)
                           : "off",
        name_of(pd.role), links ? " (KV over " + links->transport() + ")" : "", device_name);
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
  void admin_actors(std::function<void(std::string)> reply) override {
    caf::anon_send(ingress_, msg::actors_atom::value, msg::TextReply(std::move(reply)));
  }
  void admin_requests(std::function<void(std::string)> reply) override {
    caf::anon_send(ingress_, msg::requests_atom::value, msg::TextReply(std::move(reply)));
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
    kv_ = msg::kv_transfer_actor{};
    ingress_ = msg::ingress_actor{};
    admin_ = msg::admin_actor{};
    scheduler_ = msg::scheduler_actor{};
    output_ = msg::output_actor{};
    worker_ = msg::worker_actor{};
    system_->await_all_actors_done();
    system_.reset();
  }

  const Tokenizer& tokenizer() const override { return tokenizer_; }
  const std::string& model_name() const override { return model_name_; }
  int max_model_len() const override { return max_model_len_; }
  const LlamaConfig& model_config() const override { return file_.config; }
  const std::string& chat_template() const override { return chat_template_; }
  std::vector<int> eos_token_ids() const override { return eos_; }
  int max_n() const override { return max_n_; }
  std::vector<int> service_cpus() const override { return service_cpus_; }

 private:
  ModelFile file_;
  Tokenizer tokenizer_;
  cpu::CpuBackend backend_;
  std::string model_name_, chat_template_;
  int max_model_len_ = 0, max_n_ = 64;
  std::vector<int> eos_;
  std::vector<int> service_cpus_;  // where the actor threads run (empty: not pinned)
  std::unique_ptr<LlamaModel> model_;
  std::shared_ptr<StepProfile> profile_;    // the actors write to it: it outlives them
  caf::actor_system_config system_config_;  // the system keeps a reference: it must outlive it
  std::unique_ptr<caf::actor_system> system_;
  msg::worker_actor worker_;
  msg::output_actor output_;
  msg::scheduler_actor scheduler_;
  msg::admin_actor admin_;
  msg::ingress_actor ingress_;
  msg::kv_transfer_actor kv_;  // PD roles only
};

}  // namespace

std::unique_ptr<EngineClient> EngineClient::start(const EngineConfig& config) {
  check_device_flags(config);
  return start_data_parallel(
      config, data_parallel_engines(config),
      [](const EngineConfig& c) -> std::unique_ptr<EngineClient> { return std::make_unique<ActorEngine>(c); });
}

}  // namespace parley
