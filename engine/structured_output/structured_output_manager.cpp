#include "engine/structured_output/structured_output_manager.hpp"

#include <nlohmann/json.hpp>

#include "engine/structured_output/gbnf_text.hpp"
#include "engine/structured_output/json_schema_grammar.hpp"
#include "engine/structured_output/regex_grammar.hpp"

namespace parley::structured {
namespace {

std::string choice_grammar(const std::string& spec) {
  const nlohmann::json choices = nlohmann::json::parse(spec, nullptr, false);
  if (!choices.is_array() || choices.empty()) throw GrammarError("choice must be a non-empty array of strings");
  std::string root = "root ::= ";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (!choices[i].is_string()) throw GrammarError("choice[" + std::to_string(i) + "] is not a string");
    if (choices[i].get<std::string>().empty()) throw GrammarError("choice[" + std::to_string(i) + "] is empty");
    root += (i ? " | " : "") + gbnf_literal(choices[i].get<std::string>());
  }
  return root + "\n";
}

}  // namespace

std::string grammar_text(const StructuredOutputsParams& params) {
  using Kind = StructuredOutputsParams::Kind;
  switch (params.kind) {
    case Kind::Json: {
      const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(params.spec, nullptr, false);
      if (schema.is_discarded()) throw GrammarError("the JSON schema is not valid JSON");
      return json_schema_to_gbnf(schema);
    }
    case Kind::JsonObject:
      return json_object_gbnf();
    case Kind::Regex:
      return regex_to_gbnf(params.spec);
    case Kind::Choice:
      return choice_grammar(params.spec);
    case Kind::Grammar:
      return params.spec;
  }
  throw GrammarError("unknown structured output kind");
}

std::shared_ptr<const Grammar> compile_grammar(const StructuredOutputsParams& params) {
  return std::make_shared<const Grammar>(Grammar::parse(grammar_text(params)));
}

StructuredOutputManager::StructuredOutputManager(std::shared_ptr<const GrammarVocabulary> vocabulary)
    : vocabulary_(std::move(vocabulary)) {}

std::unique_ptr<StructuredOutputGrammar> StructuredOutputManager::grammar_for(const StructuredOutputsParams& params,
                                                                              std::vector<int> end_tokens) {
  std::shared_ptr<CompiledGrammar> compiled;
  {
    std::lock_guard lock(mutex_);
    for (auto it = cache_.begin(); it != cache_.end(); ++it)
      if (it->first.kind == params.kind && it->first.spec == params.spec) {  // starts_after is the matcher's
        cache_.splice(cache_.begin(), cache_, it);
        compiled = it->second;
        break;
      }
  }
  if (!compiled) {  // compiled outside the lock: another row's step need not wait for a large schema
    compiled =
        std::make_shared<CompiledGrammar>(params.grammar ? params.grammar : compile_grammar(params), vocabulary_);
    std::lock_guard lock(mutex_);
    cache_.emplace_front(params, compiled);
    if (cache_.size() > kMaxCachedGrammars) cache_.pop_back();
  }
  return std::make_unique<StructuredOutputGrammar>(std::move(compiled), std::move(end_tokens), params.starts_after);
}

}  // namespace parley::structured
