// Structured outputs' cost: decode tokens/s constrained by a JSON Schema against unconstrained, at 1 and 32
// sequences through EngineCore, with each row's first mask walked during the forward pass or when sampled
// (every run compiles the grammar anew, as for a schema not seen before); then the grammar mask's cost per token
// against the vocabulary size (a JSON document fed token by token: the first visit of a grammar state walks the
// vocabulary trie, later ones reuse its mask; applying a mask is one pass over the logits). Usage: bench_structured
// [--model M --tokenizer T] [--hf-tokenizer DIR ...] [--gen-tokens N] [--repeats R]
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <cstdio>
#include <map>

#include "engine/engine_core.hpp"
#include "engine/structured_output/json_schema_grammar.hpp"
#include "engine/structured_output/structured_output_manager.hpp"
#include "kernels/cpu/ops.hpp"
#include "model/hf_tokenizer.hpp"
#include "model/model_source.hpp"

using namespace parley;
using Clock = std::chrono::steady_clock;

namespace {

// Short records, one after another (JSON Lines): the output never completes, so with min_tokens every
// constrained sequence runs as long as an unconstrained one and the batches stay the same size.
const char* kRecordSchema = R"({"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 120},
  "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 3}},
  "required": ["name", "age", "tags"], "additionalProperties": false})";

std::string json_lines_grammar() {
  structured::JsonSchemaConverter converter;
  const std::string record = converter.add(nlohmann::ordered_json::parse(kRecordSchema), "record");
  return converter.grammar("(" + record + " \"\\n\")*");
}

struct Throughput {
  double tokens_per_second = 0;
  int tokens = 0;
};

enum class Run { Unconstrained, MasksDuringForward, MasksWhenSampled };

Throughput decode(LlamaModel& model, const ModelFile& file, const Tokenizer& tok, int seqs, int gen_tokens, Run run,
                  const std::shared_ptr<const structured::GrammarVocabulary>& vocabulary) {
  const bool constrained = run != Run::Unconstrained;
  SchedulerConfig c;
  c.max_model_len = file.config.max_seq_len;
  c.num_kv_blocks = std::max(64, seqs * (gen_tokens + 32) / 16 + 8);
  c.max_num_seqs = std::max(seqs, 1);
  c.eos_token_ids = default_stop_token_ids(*file.vocab);
  c.vocab_size = file.config.vocab_size;
  EngineCore core(model, c, false, std::nullopt, &*file.vocab);
  core.runner().set_structured_output(std::make_shared<structured::StructuredOutputManager>(vocabulary));
  core.runner().set_mask_prefetch(run == Run::MasksDuringForward);
  for (int i = 0; i < seqs; ++i) {
    SamplingParams p;
    p.temperature = 1.0f;
    p.max_tokens = gen_tokens;
    if (constrained)
      p.structured_outputs = StructuredOutputsParams{StructuredOutputsParams::Kind::Grammar, json_lines_grammar()};
    if (constrained)
      p.min_tokens = gen_tokens;
    else
      p.ignore_eos = true;
    core.add_request(Request("b" + std::to_string(i), tok.encode("Once upon a time", true), p, 11 + uint64_t(i)));
  }
  Throughput t;
  const auto start = Clock::now();
  while (core.has_unfinished_requests())
    for (const EngineCoreOutput& o : core.step()) t.tokens += int(o.new_token_ids.size());
  t.tokens_per_second = t.tokens / std::chrono::duration<double>(Clock::now() - start).count();
  return t;
}

struct MaskCost {
  int vocab = 0;
  double vocabulary_ms = 0, cold_us = 0, warm_us = 0;
  int tokens = 0;
};

// Feeds a JSON document's tokens one by one: cold is each state's first mask, warm a second pass over the same states.
MaskCost mask_cost(const Tokenizer& tok) {
  MaskCost cost;
  cost.vocab = tok.vocab().size();
  auto t0 = Clock::now();
  auto vocabulary = std::make_shared<const structured::GrammarVocabulary>(tok);
  cost.vocabulary_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  structured::StructuredOutputManager manager(vocabulary);
  const std::string doc =
      "{\"name\": \"Lily\", \"age\": 7, \"tags\": [\"park\", \"dog\"]}\n{\"name\": \"Tom\", \"age\": 30, \"tags\": "
      "[]}\n";
  const std::vector<int> ids = tok.encode(doc, false);
  cost.tokens = int(ids.size());
  std::vector<float> logits(size_t(cost.vocab), 0.0f);
  for (double* slot : {&cost.cold_us, &cost.warm_us}) {
    auto grammar = manager.grammar_for({StructuredOutputsParams::Kind::Grammar, json_lines_grammar()}, {tok.eos_id()});
    t0 = Clock::now();
    for (size_t k = 0; k <= ids.size(); ++k) {
      grammar->sync(std::span<const int>(ids.data(), k));
      grammar->apply_mask(logits.data(), cost.vocab);
    }
    *slot = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / double(ids.size() + 1);
  }
  return cost;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("Structured outputs: constrained against unconstrained decode, and the mask's cost per vocabulary");
  std::string model_path = "../shared/models/stories260K.bin", tokenizer_path = "../shared/models/tok512.bin";
  std::vector<std::string> hf_dirs;
  int gen_tokens = 128, repeats = 3, threads = 2;
  app.add_option("--model", model_path);
  app.add_option("--tokenizer", tokenizer_path);
  app.add_option("--hf-tokenizer", hf_dirs,
                 "Folders with a Hugging Face tokenizer.json: more vocabularies for the mask table");
  app.add_option("--gen-tokens", gen_tokens);
  app.add_option("--repeats", repeats, "Best of this many runs");
  app.add_option("--threads", threads);
  CLI11_PARSE(app, argc, argv);

  ModelFile file = load_model_with_vocab(model_path, tokenizer_path);
  const Tokenizer tok(*file.vocab);
  cpu::CpuBackend backend(threads);
  LlamaModel model(file.config, file.weights, backend);
  const auto vocabulary = std::make_shared<const structured::GrammarVocabulary>(tok);
  std::printf("decode on %s, %d threads, %d tokens per sequence, temperature 1, best of %d\n\n", model_path.c_str(),
              threads, gen_tokens, repeats);
  std::printf(
      "| sequences | unconstrained tok/s | JSON Schema tok/s, masks during the forward pass | constrained / "
      "unconstrained | JSON Schema tok/s, masks when sampled | constrained / unconstrained |\n"
      "|---|---|---|---|---|---|\n");
  for (int seqs : {1, 32}) {
    std::map<Run, Throughput> best;
    for (int r = 0; r < repeats; ++r)
      for (Run run : {Run::Unconstrained, Run::MasksDuringForward, Run::MasksWhenSampled}) {
        const Throughput t = decode(model, file, tok, seqs, gen_tokens, run, vocabulary);
        if (t.tokens_per_second > best[run].tokens_per_second) best[run] = t;
      }
    const double plain = best[Run::Unconstrained].tokens_per_second;
    for (Run run : {Run::MasksDuringForward, Run::MasksWhenSampled})
      if (best[run].tokens != best[Run::Unconstrained].tokens)
        std::fprintf(stderr, "warning: %d constrained tokens against %d\n", best[run].tokens,
                     best[Run::Unconstrained].tokens);
    std::printf("| %d | %.0f | %.0f | %.2fx | %.0f | %.2fx |\n", seqs, plain,
                best[Run::MasksDuringForward].tokens_per_second,
                best[Run::MasksDuringForward].tokens_per_second / plain, best[Run::MasksWhenSampled].tokens_per_second,
                best[Run::MasksWhenSampled].tokens_per_second / plain);
  }

  std::printf(
      "\n| vocabulary | tokens | trie build ms | mask us/token, first visit | mask us/token, cached "
      "|\n|---|---|---|---|---|\n");
  std::vector<std::pair<std::string, std::unique_ptr<Tokenizer>>> vocabularies;
  vocabularies.emplace_back(model_path.substr(model_path.find_last_of('/') + 1),
                            std::make_unique<Tokenizer>(*file.vocab));
  for (const std::string& dir : hf_dirs)
    vocabularies.emplace_back(std::filesystem::path(dir).lexically_normal().parent_path().filename().string(),
                              std::make_unique<Tokenizer>(import_hf_tokenizer(dir).vocab));
  for (const auto& [name, tokenizer] : vocabularies) {
    const MaskCost c = mask_cost(*tokenizer);
    std::printf("| %s | %d | %.1f | %.1f | %.1f |\n", name.c_str(), c.vocab, c.vocabulary_ms, c.cold_us, c.warm_us);
  }
  return 0;
}
