// `parley convert` and `parley gen-model`: write GGUF files for Parley and other engines.
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "actors/commands.hpp"
#include "model/convert.hpp"
#include "model/random_model.hpp"

namespace parley {
namespace {

const std::map<std::string, GgmlType> kDtypes{
    {"f32", GgmlType::F32}, {"f16", GgmlType::F16}, {"bf16", GgmlType::BF16}, {"q8_0", GgmlType::Q8_0}};

CLI::Option* add_dtype_option(CLI::App* cmd, std::string& dtype) {
  return cmd->add_option("--dtype", dtype, "Weight type: f32, f16, bf16, q8_0")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0"}))
      ->capture_default_str();
}

struct ConvertOptions {
  std::string checkpoint, tokenizer, out, dtype = "f32";
};

struct GenModelOptions {
  std::string shape = "110m", out, dtype = "f32";
  uint64_t seed = 1;
};

}  // namespace

Command add_convert_command(CLI::App& app) {
  auto o = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand("convert", "Write a GGUF (llama.cpp layout) from a llama2.c checkpoint and tokenizer.bin");
  cmd->add_option("--checkpoint", o->checkpoint, "llama2.c model .bin")->required()->check(CLI::ExistingFile);
  cmd->add_option("--tokenizer", o->tokenizer, "llama2.c tokenizer.bin")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out, "Output .gguf path")->required();
  add_dtype_option(cmd, o->dtype);
  return [o] {
    convert_llama2c(o->checkpoint, o->tokenizer, o->out, kDtypes.at(o->dtype));
    std::printf("wrote %s (%s)\n", o->out.c_str(), o->dtype.c_str());
    return 0;
  };
}

Command add_gen_model_command(CLI::App& app) {
  auto o = std::make_shared<GenModelOptions>();
  CLI::App* cmd = app.add_subcommand("gen-model", "Write a random-weight GGUF of a benchmark shape");
  cmd->add_option("--shape", o->shape, "builtin (dim 64, 4 layers) or 110m (dim 768, 12 layers, vocab 32000)")
      ->check(CLI::IsMember({"builtin", "110m"}))
      ->capture_default_str();
  cmd->add_option("--out", o->out, "Output .gguf path")->required();
  cmd->add_option("--seed", o->seed, "Weight seed")->capture_default_str();
  add_dtype_option(cmd, o->dtype);
  return [o] {
    const LlamaConfig cfg = o->shape == "110m" ? bench_110m_config() : builtin_model_config();
    write_model_gguf(make_random_model(cfg, o->seed), o->out, kDtypes.at(o->dtype));
    std::printf("wrote %s (%s, dim %d, %d layers, vocab %d)\n", o->out.c_str(), o->dtype.c_str(), cfg.dim, cfg.n_layers,
                cfg.vocab_size);
    return 0;
  };
}

}  // namespace parley
