// `parley generate`: offline generation on the in-process engine, no HTTP.
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "actors/commands.hpp"
#include "engine/offline_engine.hpp"
#include "kernels/cpu/ops.hpp"
#include "model/detokenizer.hpp"
#include "model/model_source.hpp"
#include "model/tokenizer.hpp"

namespace parley {
namespace {

struct GenerateOptions {
  std::string model, tokenizer, prompt, isa = "auto";
  SamplingParams params;
  int threads = 0;
  bool show_ids = false;
  EngineOptions engine;
};

std::string ids_to_string(const std::vector<int>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

int run_generate(const GenerateOptions& o) {
  ModelFile file = load_model_with_vocab(o.model, o.tokenizer);
  const Tokenizer tokenizer(*file.vocab);
  cpu::CpuBackend backend(o.threads, cpu::parse_isa(o.isa));
  LlamaModel model(file.config, std::move(file.weights), backend);
  EngineOptions engine_options = o.engine;
  engine_options.stop_token_ids = default_stop_token_ids(tokenizer.vocab());
  OfflineEngine engine(model, engine_options);

  const std::vector<int> prompt = tokenizer.encode(o.prompt, tokenizer.vocab().add_bos);
  // n samples of one prompt: sample i uses seed + i; unseeded, each gets its own random seed.
  std::vector<GenerationRequest> requests(o.params.n);
  SamplingParams one = o.params;
  one.n = 1;
  o.params.validate();
  for (int i = 0; i < o.params.n; ++i) {
    requests[i] = {prompt, one};
    if (o.params.seed) requests[i].params.seed = *o.params.seed + uint64_t(i);
  }
  // A single sample streams as it is generated; several print one after another.
  std::unique_ptr<IncrementalDetokenizer> stream;
  if (o.params.n == 1) stream = std::make_unique<IncrementalDetokenizer>(tokenizer, prompt.back());
  bool echoed = false;  // the prompt is echoed with the first token, after the request was accepted
  const auto results = engine.generate(requests, [&](int, int token) {
    if (!stream) return;
    if (!std::exchange(echoed, true)) std::fputs(o.prompt.c_str(), stdout);
    std::fputs(stream->push(token).c_str(), stdout);
    std::fflush(stdout);
  });
  if (stream) std::printf("%s\n", stream->flush().c_str());
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (o.params.n > 1) std::printf("--- sample %zu (seed %llu) ---\n%s%s\n", i, (unsigned long long)r.seed, o.prompt.c_str(),
                                    tokenizer.decode(r.output_token_ids, prompt.back()).c_str());
    if (o.show_ids) {
      std::printf("prompt_token_ids: %s\n", ids_to_string(prompt).c_str());
      std::printf("output_token_ids: %s\n", ids_to_string(r.output_token_ids).c_str());
    }
    std::fprintf(stderr, "[sample %zu: %zu tokens, finish_reason %s, seed %llu]\n", i, r.output_token_ids.size(),
                 finish_reason_name(r.finish), (unsigned long long)r.seed);
  }
  return 0;
}

}  // namespace

Command add_generate_command(CLI::App& app) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text offline (no server)");
  cmd->add_option("--model", o->model, "GGUF or llama2.c checkpoint (default: the built-in random model)")->check(CLI::ExistingFile);
  cmd->add_option("--tokenizer", o->tokenizer, "llama2.c tokenizer.bin or GGUF (default: the model's own)")->check(CLI::ExistingFile);
  cmd->add_option("--prompt", o->prompt, "Prompt text")->required();
  cmd->add_option("--max-tokens", o->params.max_tokens, "Tokens to generate at most")->capture_default_str();
  cmd->add_option("--temperature", o->params.temperature, "0 is greedy")->capture_default_str();
  cmd->add_option("--top-k", o->params.top_k, "-1 keeps all tokens")->capture_default_str();
  cmd->add_option("--top-p", o->params.top_p, "Nucleus mass in (0, 1]")->capture_default_str();
  cmd->add_option("--min-p", o->params.min_p, "Minimum probability relative to the top token")->capture_default_str();
  cmd->add_option_function<uint64_t>("--seed", [o](uint64_t s) { o->params.seed = s; }, "Seed (sample i uses seed + i); random when absent");
  cmd->add_option("--n", o->params.n, "Samples of the prompt")->capture_default_str();
  cmd->add_flag("--ignore-eos", o->params.ignore_eos, "Do not stop at EOS/BOS");
  cmd->add_flag("--show-ids", o->show_ids, "Also print prompt and output token ids");
  cmd->add_option("--threads", o->threads, "Compute threads (0: all cores)")->capture_default_str();
  cmd->add_option("--isa", o->isa, "Kernel instruction set: auto, avx512, avx2, generic")->capture_default_str();
  cmd->add_option("--block-size", o->engine.block_size, "KV cache block size in tokens")->capture_default_str();
  cmd->add_option("--num-kv-blocks", o->engine.num_kv_blocks, "KV cache blocks (0: 8 full contexts)")->capture_default_str();
  cmd->add_option("--max-num-batched-tokens", o->engine.max_num_batched_tokens, "Tokens per forward pass")->capture_default_str();
  return [o] { return run_generate(*o); };
}

}  // namespace parley
