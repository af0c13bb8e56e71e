// `parley convert`, `parley gen-model` and `parley quantize`: write GGUF files for Parley and other engines.
#include <chrono>
#include <cstdio>
#include <filesystem>
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

std::string shape_text(const std::vector<uint64_t>& ne) {
  std::string text;
  for (uint64_t d : ne) text += (text.empty() ? "" : " x ") + std::to_string(d);
  return text;
}

// One line per tensor on stderr: its place, name, shape and the type chosen.
void print_tensor(const TensorWritten& t) {
  std::fprintf(stderr, "[%3zu/%3zu] %-32s %-14s %5s -> %s%s\n", t.index + 1, t.count, t.name.c_str(),
               shape_text(t.ne).c_str(), quant::traits(t.source).name, quant::traits(t.type).name,
               t.copied ? " (copied)" : "");
}

double mib(const std::string& path) { return double(std::filesystem::file_size(path)) / (1024.0 * 1024.0); }

}  // namespace

int run_convert(const ConvertOptions& o) {
  convert_llama2c(o.checkpoint, o.tokenizer, o.out, o.dtype, print_tensor);
  std::printf("wrote %s (%s)\n", o.out.c_str(), std::string(file_type_name(o.dtype)).c_str());
  return 0;
}

int run_gen_model(const GenModelOptions& o) {
  if (!o.pre.empty() && o.hf_tokenizer.empty())
    throw std::invalid_argument("--pre names the pre-tokenizer of --hf-tokenizer");
  const ModelShape shape = o.arch.empty() ? named_shape(o.shape) : tiny_arch_shape(o.arch);
  LlamaConfig cfg = shape.config;
  cfg.pooling = o.pooling.value_or(PoolingType::None);
  if (cfg.pooling == PoolingType::Rank && cfg.arch != "qwen3" && cfg.arch != "bert")
    throw std::invalid_argument(
        "--pooling rank: qwen3 rerankers (Qwen3-Reranker's head) and bert cross-encoders are written");
  // Qwen3-Reranker's two labels; a cross-encoder's one score.
  if (cfg.pooling == PoolingType::Rank && cfg.arch == "qwen3") cfg.classifier_labels = {"yes", "no"};
  std::optional<HfTokenizer> hf;
  if (!o.hf_tokenizer.empty()) {
    hf = import_hf_tokenizer(o.hf_tokenizer, o.pre);
    cfg.vocab_size = hf->vocab.size();
  }
  // Past 8 GiB of F32 weights a model is drawn one tensor at a time as it is written (another random stream).
  const bool drawn = cfg.parameter_count(false) * int64_t(sizeof(float)) > (int64_t(8) << 30);
  std::fprintf(stderr, "generating %s: dim %d, %d layers, vocab %d%s...\n", cfg.arch.c_str(), cfg.dim, cfg.n_layers,
               cfg.vocab_size, drawn ? ", each tensor drawn as it is written" : "");
  std::optional<Vocab> vocab = hf ? std::optional<Vocab>(hf->vocab) : std::nullopt;
  if (drawn && (o.with_mtp || shape.rope_factors))
    throw std::invalid_argument("a model this large is drawn as it is written, without an MTP head or RoPE factors");
  ModelFile model = drawn ? random_model_outline(cfg, o.seed, std::move(vocab))
                          : make_random_model(cfg, o.seed, o.with_mtp, std::move(vocab), shape.rope_factors);
  if (hf) model.chat_template = hf->chat_template;
  const auto start = std::chrono::steady_clock::now();
  if (drawn)
    write_drawn_gguf(model, o.out, o.dtype, random_tensor_draw(cfg, o.seed), print_tensor);
  else
    write_model_gguf(model, o.out, o.dtype, print_tensor);
  std::fprintf(stderr, "%.2f GiB in %.0f s\n", mib(o.out) / 1024.0,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  std::printf(
      "wrote %s (%s %s, dim %d, %d layers%s, vocab %d%s)\n", o.out.c_str(), cfg.arch.c_str(),
      std::string(file_type_name(o.dtype)).c_str(), cfg.dim, cfg.n_layers, o.with_mtp ? " and an MTP head" : "",
      cfg.vocab_size,
      hf ? (", pre-tokenizer " + hf->vocab.pre + (hf->chat_template.empty() ? "" : ", chat template")).c_str() : "");
  return 0;
}

int run_quantize(const QuantizeOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  quantize_model(o.in, o.tokenizer, o.out, o.type, print_tensor);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "quantized %s (%.2f MiB) -> %s (%.2f MiB, %s) in %.2f s\n", o.in.c_str(), mib(o.in),
               o.out.c_str(), mib(o.out), std::string(file_type_name(o.type)).c_str(), seconds);
  return 0;
}

}  // namespace parley
