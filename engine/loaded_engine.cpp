#include "engine/loaded_engine.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "engine/device_setup.hpp"
#include "engine/pooler.hpp"
#include "engine/structured_output/structured_output_manager.hpp"
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

std::string model_name_of(const EngineConfig& c) {
  if (!c.served_model_name.empty()) return c.served_model_name;
  if (c.model_path.empty()) return "parley-builtin";
  return std::filesystem::path(c.model_path).stem().string();
}

// The flags' scheduler config fitted to the model: its context, pooling, stop tokens, and KV blocks.
SchedulerConfig scheduler_config_for(const EngineConfig& config, const LlamaConfig& model, const Vocab& vocab) {
  SchedulerConfig sc = config.scheduler;
  sc.pooling = model.pooling;
  sc.bidirectional = model.encoder;
  if (model.encoder) sc.enable_prefix_caching = false;  // no token's KV is a prefix's alone
  if (sc.max_model_len <= 0 || sc.max_model_len > model.max_seq_len) sc.max_model_len = model.max_seq_len;
  // On a GPU the blocks fill what --gpu-memory-utilization leaves, unless a count or size is given.
  const bool blocks_given = sc.num_kv_blocks > 0 || config.kv_cache_memory_bytes > 0;
  sc.num_kv_blocks = config.device != DeviceKind::Cuda || blocks_given ? resolve_num_kv_blocks(config, sc, model) : 0;
  sc.eos_token_ids = default_stop_token_ids(vocab);
  sc.vocab_size = model.vocab_size;
  return with_speculation(sc, config.speculative);  // before the device: a GPU sizes its decode graphs for the drafts
}

}  // namespace

LoadedEngine::LoadedEngine(const EngineConfig& config)
    : file(load_model_with_vocab(config.model_path, config.tokenizer_path)),
      tokenizer(*file.vocab),
      backend(config.threads, config.isa),
      model_name(model_name_of(config)) {
  check_device_flags(config);
  const bool cuda = config.device == DeviceKind::Cuda;
  // The served config says what the engine does: a pooling type embeds, None generates.
  file.config.pooling = served_pooling(config.task, config.pooling, file.config.pooling);
  if (file.config.encoder && file.config.pooling == PoolingType::None)
    throw std::invalid_argument(file.config.arch +
                                " is an encoder: it embeds or reranks, it cannot generate (--task embed or rerank, "
                                "with --pooling where the file names none)");
  if (file.config.pooling != PoolingType::None && (cuda || config.role != Role::Colocated))
    throw std::invalid_argument("--task embed and rerank run on --device cpu in a colocated instance only for now");
  if (file.config.pooling == PoolingType::Rank && file.weights.cls_out.empty())
    throw std::invalid_argument("--task rerank needs a classifier head: the model file has no cls.output.weight");
  SchedulerConfig sc = scheduler_config_for(config, file.config, tokenizer.vocab());
  std::unique_ptr<DeviceModel> device;
  if (cuda) {
    device = make_cuda_device_model(config, file, sc, sc.num_kv_blocks);
    sc.num_kv_blocks = device->num_blocks();
    // Its logits buffers hold a row per sequence (and draft), not one per prompt token.
    sc.prompt_logprobs_refusal =
        "prompt_logprobs (and echo with logprobs) are not supported with --device cuda yet: "
        "they need a logits row per prompt token";
  }
  sc.validate();
  if (config.max_n < 1 || config.max_n > 128) throw std::invalid_argument("--max-n must be in [1, 128]");
  if (!cuda) {
    model = std::make_unique<LlamaModel>(file.config, std::move(file.weights), backend);
    device = std::make_unique<CpuDeviceModel>(*model, sc.num_kv_blocks, sc.block_size,
                                              kv_dtype_for(config.kv_cache_dtype, DeviceKind::Cpu));
  }
  file.weights = {};  // on the device now (or moved into the CPU model)
  parts = make_engine_parts(std::move(device), std::move(sc), config.speculative, &tokenizer.vocab());
  parts.runner->set_structured_output(std::make_shared<structured::StructuredOutputManager>(
      std::make_shared<const structured::GrammarVocabulary>(tokenizer)));
  parts.runner->set_profile(config.profile.get());
}

}  // namespace parley
