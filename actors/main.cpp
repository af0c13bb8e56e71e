// parley: the command line. Flags map onto each command's option struct (actors/commands.hpp).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "actors/commands.hpp"

namespace {

CLI::Option* dtype_option(CLI::App* cmd, std::string& dtype) {
  return cmd->add_option("--dtype", dtype, "Weight type: f32, f16, bf16, q8_0")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0"}))
      ->capture_default_str();
}

void add_generate_flags(CLI::App* cmd, parley::GenerateOptions& o) {
  cmd->add_option("--model", o.model, "GGUF or llama2.c checkpoint (default: the built-in random model)")->check(CLI::ExistingFile);
  cmd->add_option("--tokenizer", o.tokenizer, "llama2.c tokenizer.bin or GGUF (default: the model's own)")->check(CLI::ExistingFile);
  cmd->add_option("--prompt", o.prompt, "Prompt text")->required();
  cmd->add_option("--max-tokens", o.params.max_tokens, "Tokens to generate at most")->capture_default_str();
  cmd->add_option("--temperature", o.params.temperature, "0 is greedy")->capture_default_str();
  cmd->add_option("--top-k", o.params.top_k, "-1 keeps all tokens")->capture_default_str();
  cmd->add_option("--top-p", o.params.top_p, "Nucleus mass in (0, 1]")->capture_default_str();
  cmd->add_option("--min-p", o.params.min_p, "Minimum probability relative to the top token")->capture_default_str();
  cmd->add_option_function<uint64_t>("--seed", [&o](uint64_t s) { o.params.seed = s; }, "Seed (sample i uses seed + i); random when absent");
  cmd->add_option("--n", o.params.n, "Samples of the prompt")->capture_default_str();
  cmd->add_flag("--ignore-eos", o.params.ignore_eos, "Do not stop at EOS/BOS");
  cmd->add_flag("--show-ids", o.show_ids, "Also print prompt and output token ids");
  cmd->add_option("--threads", o.threads, "Compute threads (0: all cores)")->capture_default_str();
  cmd->add_option("--isa", o.isa, "Kernel instruction set: auto, avx512, avx2, generic")->capture_default_str();
  cmd->add_option("--block-size", o.engine.block_size, "KV cache block size in tokens")->capture_default_str();
  cmd->add_option("--num-kv-blocks", o.engine.num_kv_blocks, "KV cache blocks (0: enough for every sample at once)")->capture_default_str();
  cmd->add_option("--max-num-batched-tokens", o.engine.max_num_batched_tokens, "Tokens per forward pass")->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Parley: an LLM inference engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "parley 0.1.0");

  parley::GenerateOptions generate;
  add_generate_flags(app.add_subcommand("generate", "Generate text offline (no server)"), generate);

  parley::ConvertOptions convert;
  CLI::App* conv = app.add_subcommand("convert", "Write a GGUF (llama.cpp layout) from a llama2.c checkpoint and tokenizer.bin");
  conv->add_option("--checkpoint", convert.checkpoint, "llama2.c model .bin")->required()->check(CLI::ExistingFile);
  conv->add_option("--tokenizer", convert.tokenizer, "llama2.c tokenizer.bin")->required()->check(CLI::ExistingFile);
  conv->add_option("--out", convert.out, "Output .gguf path")->required();
  dtype_option(conv, convert.dtype);

  parley::GenModelOptions gen_model;
  CLI::App* gen = app.add_subcommand("gen-model", "Write a random-weight GGUF of a benchmark shape");
  gen->add_option("--shape", gen_model.shape, "builtin (dim 64, 4 layers) or 110m (dim 768, 12 layers, vocab 32000)")
      ->check(CLI::IsMember({"builtin", "110m"}))
      ->capture_default_str();
  gen->add_option("--out", gen_model.out, "Output .gguf path")->required();
  gen->add_option("--seed", gen_model.seed, "Weight seed")->capture_default_str();
  dtype_option(gen, gen_model.dtype);

  CLI11_PARSE(app, argc, argv);
  try {
    if (app.got_subcommand("generate")) return parley::run_generate(generate);
    if (app.got_subcommand("convert")) return parley::run_convert(convert);
    if (app.got_subcommand("gen-model")) return parley::run_gen_model(gen_model);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parley: error: %s\n", e.what());
    return 1;
  }
  return 2;
}
