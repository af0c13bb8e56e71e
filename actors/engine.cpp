// EngineClient over the actor system: loads the model, spawns worker, output, scheduler, admin and
// ingress, and turns calls from other threads into messages to the ingress.
#include <spdlog/spdlog.h>

#include <filesystem>

#include "actors/actors.hpp"
#include "actors/output_service.hpp"
#include "engine/engine_core.hpp"
#include "kernels/cpu/ops.hpp"
#include "model/model_source.hpp"

namespace parley {
namespace {

int64_t kv_bytes_per_block(const LlamaConfig& m, int block_size) {
  return 2 * int64_t(m.n_layers) * m.kv_dim() * block_size * int64_t(sizeof(float));
}

// Blocks for the KV cache: the explicit count, else what the memory size holds, else enough for
// max_num_seqs full contexts capped at 1 GiB. A draft model's (or MTP head's) KV has a block of its own per block id.
int resolve_num_kv_blocks(const EngineConfig& c, const SchedulerConfig& sc, const LlamaConfig& m) {
  const int bs = sc.block_size;
  if (bs < 1) throw std::invalid_argument("--block-size must be at least 1");
  if (sc.num_kv_blocks > 0) return sc.num_kv_blocks;
  int64_t bytes_per_block = kv_bytes_per_block(m, bs);
  if (c.speculative && c.speculative->method == SpecMethod::Mtp) {  // the head's one layer
    LlamaConfig head = m;
    head.n_layers = 1;
    bytes_per_block += kv_bytes_per_block(head, bs);
  }
  if (c.speculative && c.speculative->method == SpecMethod::DraftModel) try {
      bytes_per_block += kv_bytes_per_block(load_model_config(c.speculative->model), bs);
    } catch (const std::runtime_error& e) {
      throw std::invalid_argument(std::string("--speculative-config: draft model: ") + e.what());
    }
  int64_t bytes = c.kv_cache_memory_bytes;
  if (bytes == 0) {
    const int64_t full = int64_t(sc.max_num_seqs) * ((sc.max_model_len + bs - 1) / bs) * bytes_per_block;
    bytes = std::min<int64_t>(full, int64_t(1) << 30);
  }
  const int64_t blocks = bytes / bytes_per_block;
  if (blocks < 1) throw std::invalid_argument("the KV cache memory holds no block of " + std::to_string(bytes_per_block) + " bytes");
  return int(std::min<int64_t>(blocks, 1 << 24));
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
    SchedulerConfig sc = config.scheduler;
    if (sc.max_model_len <= 0 || sc.max_model_len > file_.config.max_seq_len) sc.max_model_len = file_.config.max_seq_len;
    sc.num_kv_blocks = resolve_num_kv_blocks(config, sc, file_.config);
    sc.eos_token_ids = default_stop_token_ids(tokenizer_.vocab());
    sc.vocab_size = file_.config.vocab_size;
    sc = with_speculation(sc, config.speculative);
    sc.validate();
    max_model_len_ = sc.max_model_len;
    if (config.max_n < 1 || config.max_n > 128) throw std::invalid_argument("--max-n must be in [1, 128]");
    max_n_ = config.max_n;
    eos_ = sc.eos_token_ids;
    model_ = std::make_unique<LlamaModel>(file_.config, std::move(file_.weights), backend_);
    auto runner = std::make_unique<ModelRunner>(*model_, sc.num_kv_blocks, sc.block_size, sc.max_num_seqs, eos_);
    if (config.speculative)
      runner->set_proposer(make_proposer(*config.speculative, {*model_, runner->kv_cache(), sc.max_model_len, &tokenizer_.vocab()}),
                           config.speculative->verify);
    system_ = std::make_unique<caf::actor_system>(system_config_);
    worker_ = spawn_worker(*system_, std::move(runner));
    output_ = spawn_output(*system_, std::make_unique<OutputService>(tokenizer_, model_name_));
    scheduler_ = spawn_scheduler(*system_, sc, config.async_scheduling, worker_, output_);
    admin_ = spawn_admin(*system_, scheduler_, worker_, output_);
    ingress_ = spawn_ingress(*system_, scheduler_, output_, admin_);
    spdlog::info("engine up: model {} ({} layers, dim {}, vocab {}), context {}, {} KV blocks of {} tokens, "
                 "max {} seqs, {} batched tokens, async scheduling {}, speculation {}", model_name_, file_.config.n_layers, file_.config.dim,
                 file_.config.vocab_size, max_model_len_, sc.num_kv_blocks, sc.block_size, sc.max_num_seqs,
                 sc.max_num_batched_tokens, config.async_scheduling ? "on" : "off",
                 config.speculative ? config.speculative->method_name() + " k=" + std::to_string(sc.num_speculative_tokens) : "off");
  }
  ~ActorEngine() override { shutdown(); }

  void submit(std::vector<EngineRequestSpec> specs, std::shared_ptr<RequestSink> sink) override {
    msg::Submission sub;
    for (auto& s : specs) {
      sub.requests.emplace_back(std::move(s.req_id), std::move(s.prompt_token_ids), std::move(s.params), 0);
      sub.requests.back().child_req_ids = std::move(s.child_req_ids);
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
  void shutdown() override {
    if (!system_) return;
    for (const caf::actor& a : {caf::actor_cast<caf::actor>(ingress_), caf::actor_cast<caf::actor>(admin_),
                                caf::actor_cast<caf::actor>(scheduler_), caf::actor_cast<caf::actor>(output_),
                                caf::actor_cast<caf::actor>(worker_)})
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
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
  const std::string& chat_template() const override { return chat_template_; }
  std::vector<int> eos_token_ids() const override { return eos_; }
  int max_n() const override { return max_n_; }

 private:
  ModelFile file_;
  Tokenizer tokenizer_;
  cpu::CpuBackend backend_;
  std::string model_name_, chat_template_;
  int max_model_len_ = 0, max_n_ = 64;
  std::vector<int> eos_;
  std::unique_ptr<LlamaModel> model_;
  caf::actor_system_config system_config_;  // the system keeps a reference: it must outlive it
  std::unique_ptr<caf::actor_system> system_;
  msg::worker_actor worker_;
  msg::output_actor output_;
  msg::scheduler_actor scheduler_;
  msg::admin_actor admin_;
  msg::ingress_actor ingress_;
};

}  // namespace

std::unique_ptr<EngineClient> EngineClient::start(const EngineConfig& config) {
  return std::make_unique<ActorEngine>(config);
}

}  // namespace parley
