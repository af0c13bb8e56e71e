// `parley convert` and `parley gen-model`: write GGUF files for Parley and other engines.
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "actors/commands.hpp"
#include "model/convert.hpp"
#include "model/hf_tokenizer.hpp"
#include "model/model_shapes.hpp"
#include "model/random_model.hpp"

namespace parley {
namespace {

GgmlType parse_dtype(const std::string& name) {
  static const std::map<std::string, GgmlType> kDtypes{
      {"f32", GgmlType::F32}, {"f16", GgmlType::F16}, {"bf16", GgmlType::BF16}, {"q8_0", GgmlType::Q8_0}};
  const auto it = kDtypes.find(name);
  if (it == kDtypes.end()) throw std::invalid_argument("unknown dtype '" + name + "' (expected f32, f16, bf16, q8_0)");
  return it->second;
}

}  // namespace

int run_convert(const ConvertOptions& o) {
  convert_llama2c(o.checkpoint, o.tokenizer, o.out, parse_dtype(o.dtype));
  std::printf("wrote %s (%s)\n", o.out.c_str(), o.dtype.c_str());
  return 0;
}

int run_gen_model(const GenModelOptions& o) {
  if (!o.pre.empty() && o.hf_tokenizer.empty()) throw std::invalid_argument("--pre names the pre-tokenizer of --hf-tokenizer");
  const ModelShape shape = o.arch.empty() ? named_shape(o.shape) : tiny_arch_shape(o.arch);
  LlamaConfig cfg = shape.config;
  std::optional<HfTokenizer> hf;
  if (!o.hf_tokenizer.empty()) {
    hf = import_hf_tokenizer(o.hf_tokenizer, o.pre);
    cfg.vocab_size = hf->vocab.size();
  }
  ModelFile model = make_random_model(cfg, o.seed, o.with_mtp, hf ? std::optional<Vocab>(hf->vocab) : std::nullopt,
                                      shape.rope_factors);
  if (hf) model.chat_template = hf->chat_template;
  write_model_gguf(model, o.out, parse_dtype(o.dtype));
  std::printf("wrote %s (%s %s, dim %d, %d layers%s, vocab %d%s)\n", o.out.c_str(), cfg.arch.c_str(), o.dtype.c_str(),
              cfg.dim, cfg.n_layers,
              o.with_mtp ? " and an MTP head" : "", cfg.vocab_size,
              hf ? (", pre-tokenizer " + hf->vocab.pre + (hf->chat_template.empty() ? "" : ", chat template")).c_str() : "");
  return 0;
}

}  // namespace parley
