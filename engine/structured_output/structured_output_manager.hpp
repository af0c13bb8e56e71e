// Structured outputs on the worker side (vLLM's StructuredOutputManager): a request's constraint as
// GBNF text, compiled once per distinct constraint and bound to this vocabulary, and a matcher per row.
#pragma once
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/sampling_params.hpp"
#include "engine/structured_output/compiled_grammar.hpp"

namespace parley::structured {

// The constraint as a GBNF grammar: a JSON Schema, any JSON object, a regex, a choice of strings, or a
// grammar as given. Throws GrammarError naming what is wrong (an unsupported keyword, a syntax error).
std::string grammar_text(const StructuredOutputsParams& params);
// grammar_text parsed: what a server checks before it accepts a request. Throws GrammarError.
std::shared_ptr<const Grammar> compile_grammar(const StructuredOutputsParams& params);

class StructuredOutputManager {
 public:
  explicit StructuredOutputManager(std::shared_ptr<const GrammarVocabulary> vocabulary);

  // A matcher at the start of the constraint; end_tokens end the output where the text is complete.
  // Throws GrammarError (a request that skipped validation).
  std::unique_ptr<StructuredOutputGrammar> grammar_for(const StructuredOutputsParams& params,
                                                       std::vector<int> end_tokens);
  const GrammarVocabulary& vocabulary() const { return *vocabulary_; }

 private:
  static constexpr size_t kMaxCachedGrammars = 64;  // most recently used; a grammar's masks can be large

  std::shared_ptr<const GrammarVocabulary> vocabulary_;
  std::mutex mutex_;
  std::list<std::pair<StructuredOutputsParams, std::shared_ptr<CompiledGrammar>>> cache_;  // front: most recent
};

}  // namespace parley::structured
