#include "actors/engine_flags.hpp"

#include <cstdint>
#include <optional>
#include <string>

#include "actors/cli_config.hpp"
#include "kernels/cpu/isa.hpp"

namespace parley {
namespace {

// Bytes from "4096", "512K", "256M", "2G".
int64_t parse_bytes(const std::string& text) {
  size_t used = 0;
  const double value = std::stod(text, &used);
  const std::string unit = text.substr(used);
  const double scale = unit.empty()  ? 1
                       : unit == "K" ? 1024.0
                       : unit == "M" ? 1048576.0
                       : unit == "G" ? 1073741824.0
                                     : -1;
  if (scale < 0 || value <= 0)
    throw CLI::ValidationError("--kv-cache-memory", "expected a size like 512M or 2G, got " + text);
  return int64_t(value * scale);
}

void add_model_flags(CLI::App* cmd, EngineConfig& e) {
  cmd->add_option("--model", e.model_path, "GGUF or llama2.c checkpoint (default: the built-in random model)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--tokenizer", e.tokenizer_path, "llama2.c tokenizer.bin or GGUF (default: the model's own)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--served-model-name", e.served_model_name, "Model name in the API (default: the model file's stem)");
  cmd->add_option("--threads", e.threads, "Compute threads (0: all cores)")->capture_default_str()->check(at_least(0));
  add_choice(cmd, e.cpu_affinity,
             "auto: with CPUs to spare beyond the compute threads, the worker computes on CPUs of its own and "
             "the actor threads run on the rest; off: the OS places every thread");
  cmd->add_option_function<std::string>(
         "--isa", [&e](const std::string& name) { e.isa = cpu::parse_isa(name); },
         "Kernel instruction set: auto (the best this CPU has), amx, avx512 (AMX off), avx2, generic")
      ->check(accepted_by(cpu::parse_isa))
      ->default_str(cpu::isa_name(e.isa));
}

void add_kv_cache_flags(CLI::App* cmd, EngineConfig& e) {
  SchedulerConfig& s = e.scheduler;
  cmd->add_option("--block-size", s.block_size, "KV cache block size in tokens")
      ->capture_default_str()
      ->check(at_least(1));
  cmd->add_option("--num-kv-blocks", s.num_kv_blocks, "KV cache blocks (0: from --kv-cache-memory)")
      ->capture_default_str()
      ->check(at_least(0));
  cmd->add_option_function<std::string>(
      "--kv-cache-memory", [&e](const std::string& v) { e.kv_cache_memory_bytes = parse_bytes(v); },
      "KV cache size, e.g. 512M (default: max-num-seqs full contexts, at most 1G)");
  cmd->add_option_function<std::string>(
         "--kv-cache-dtype",
         [&e](const std::string& v) {
           try {
             e.kv_cache_dtype = v == "auto" ? std::nullopt : std::optional(parse_kv_dtype(v));
           } catch (const std::invalid_argument& err) {
             throw CLI::ValidationError("--kv-cache-dtype", err.what());
           }
         },
         "KV cache element type: auto (" + kv_dtype_name(kv_dtype_for(std::nullopt, DeviceKind::Cpu)) + " on cpu, " +
             kv_dtype_name(kv_dtype_for(std::nullopt, DeviceKind::Cuda)) + " on cuda), f32, f16 or bf16")
      ->default_str("auto");
}

void add_scheduler_flags(CLI::App* cmd, EngineConfig& e) {
  SchedulerConfig& s = e.scheduler;
  cmd->add_option("--max-num-batched-tokens", s.max_num_batched_tokens, "Tokens per step (forward pass)")
      ->capture_default_str()
      ->check(at_least(1));
  cmd->add_option("--max-num-seqs", s.max_num_seqs, "Requests running at once")
      ->capture_default_str()
      ->check(at_least(1));
  cmd->add_option("--max-model-len", s.max_model_len, "Context length (0: the model's)")
      ->capture_default_str()
      ->check(at_least(0));
  cmd->add_option("--long-prefill-token-threshold", s.long_prefill_token_threshold,
                  "A prefill chunk takes at most this many tokens (0: only the step budget limits it)")
      ->capture_default_str()
      ->check(at_least(0));
  cmd->add_option("--max-waiting", s.max_waiting,
                  "Waiting-queue bound in sequences (prompts x n); beyond it requests get 503, one larger than it 400")
      ->capture_default_str()
      ->check(at_least(1));
  // A flag that defaults on says so in default_str: --print-config writes it, and a config file sets it, by its
  // positive name.
  cmd->add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", s.enable_prefix_caching,
                "Reuse cached KV blocks of a shared prompt prefix (default on)")
      ->default_str("true");
  cmd->add_flag("--delayed-split,!--no-delayed-split", s.enable_delayed_split,
                "n > 1 as one prefill split into n (default on; off: n independent requests)")
      ->default_str("true");
  cmd->add_flag("--async-scheduling,!--no-async-scheduling", e.async_scheduling,
                "Plan step N+1 while the worker runs step N (default on)")
      ->default_str("true");
  cmd->add_option_function<std::string>(
      "--speculative-config",
      [&e](const std::string& v) {
        try {
          e.speculative = SpeculativeConfig::parse(v);
        } catch (const std::invalid_argument& err) {
          throw CLI::ValidationError("--speculative-config", err.what());
        }
      },
      "Speculative decoding as JSON, e.g. '{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'");
  cmd->add_option("--max-n", e.max_n, "The largest n a request may ask for (at most 128)")
      ->capture_default_str()
      ->check(in_range(1, 128));
}

// Prefill/decode disaggregation (docs/pd.md).
void add_pd_flags(CLI::App* cmd, EngineConfig& e) {
  add_choice(cmd, e.role, "colocated, prefill (serves decode instances) or decode (prefills on --prefill-peers)");
  cmd->add_option("--kv-port", e.kv_port,
                  "Prefill role: the port its KV transfer actor is published on (0: any free port, logged)")
      ->capture_default_str()
      ->check(in_range(0, 65535));
  cmd->add_option("--kv-host", e.kv_host,
                  "Prefill role: the address its --kv-port is bound to (default: every interface)");
  cmd->add_option("--kv-secret", e.kv_secret_file,
                  "Prefill and decode roles: a file whose secret KV peers must prove they hold (challenge-response) "
                  "before any prompt or KV is exchanged")
      ->check(CLI::ExistingFile);
  cmd->add_option("--prefill-peers", e.prefill_peers, "Decode role: host:port of each prefill instance's --kv-port")
      ->delimiter(',');
  add_listed_choice(cmd, e.prefill_routing, "Decode role: round_robin or least_loaded");
  cmd->add_option_function<std::string>(
         "--kv-load-failure-policy", [&e](const std::string& v) { e.kv_recompute_on_failure = v == "recompute"; },
         "Decode role: when a transfer fails, recompute the prompt here or fail the request")
      ->check(CLI::IsMember({"recompute", "fail"}))
      ->default_str("recompute");
}

void add_device_flags(CLI::App* cmd, EngineConfig& e) {
  add_choice(cmd, e.device, "Where the model runs: cpu or cuda");
  cmd->add_option("--devices", e.devices,
                  "CUDA: the GPU ids to run on, one engine (worker) per GPU, e.g. 0,1 (default 0)")
      ->delimiter(',')
      ->check(at_least(0));
  cmd->add_option("--data-parallel-size", e.data_parallel_size,
                  "Engines (scheduler, worker, KV cache each) behind one front door; with --device cuda, the number of "
                  "--devices")
      ->capture_default_str()
      ->check(at_least(1));
  add_listed_choice(cmd, e.dtype,
                    "Weights of the GEMMs: auto (cpu float32, cuda bfloat16), float32, bfloat16, float16");
  cmd->add_option(
         "--gpu-memory-utilization", e.gpu_memory_utilization,
         "CUDA: the share of the GPU's memory for weights, activations and KV blocks (the blocks take what is left)")
      ->capture_default_str()
      ->check(in_range(0, 1, true));
  cmd->add_flag("--enforce-eager", e.enforce_eager, "CUDA: run every step eagerly (no CUDA graphs)");
  cmd->add_option("--max-cudagraph-capture-size", e.max_cudagraph_capture_size,
                  "CUDA: the largest uniform decode batch (sequences) captured as a graph; capped at --max-num-seqs")
      ->capture_default_str()
      ->check(at_least(1));
}

// The KV transfers between prefill and decode instances; after the device flags, as --help has always listed them.
void add_kv_transfer_flags(CLI::App* cmd, EngineConfig& e) {
  add_choice(cmd, e.kv_transport,
             "Prefill and decode roles: KV as bytes through the actors (tcp) or GPU to GPU over NCCL (nccl, "
             "--device cuda on both)");
  cmd->add_option(
         "--kv-transfer-timeout", e.kv_transfer_timeout_s,
         "Seconds a decode instance waits for a KV transfer; a prefill instance's lease on the blocks it sent; "
         "with device links, the limit for opening one and for each transfer, and the wait before reopening one")
      ->capture_default_str();
}

}  // namespace

void add_engine_flags(CLI::App* cmd, EngineConfig& e) {
  add_model_flags(cmd, e);
  add_kv_cache_flags(cmd, e);
  add_scheduler_flags(cmd, e);
  add_pd_flags(cmd, e);
  add_device_flags(cmd, e);
  add_kv_transfer_flags(cmd, e);
}

}  // namespace parley
