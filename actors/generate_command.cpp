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

std::string ids_to_string(const std::vector<int>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

}  // namespace

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

}  // namespace parley
