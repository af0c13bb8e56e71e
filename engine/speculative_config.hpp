// --speculative-config, parsed from JSON with vLLM's field names: which proposer drafts
// tokens, how many (k), and how the target verifies them. Every field is checked; an unknown one is an
// error, never ignored.
#pragma once
#include <string>

namespace parley {

enum class SpecMethod { Ngram, DraftModel, LayerSkip, Mtp };
enum class SpecVerify { Exact, Rejection };

struct SpeculativeConfig {
  SpecMethod method = SpecMethod::Ngram;
  int num_speculative_tokens = 0;  // k: drafts per request per step
  int prompt_lookup_min = 5;       // ngram: shortest suffix to match (vLLM's defaults: 5 and 5, or each the other's)
  int prompt_lookup_max = 5;       // ngram: longest suffix to match
  std::string model;               // draft_model: the draft GGUF (same vocabulary as the target)
  int draft_layers = 0;            // layer_skip: the target's first L layers draft, with its final norm and head
  SpecVerify verify = SpecVerify::Exact;  // exact: output identical to no speculation; rejection: same distribution
  bool pad_uniform = true;                // every decode request carries 1 + k query tokens (placeholder drafts pad)

  // Throws std::invalid_argument naming the field and what it accepts.
  static SpeculativeConfig parse(const std::string& json);
  std::string method_name() const;
  // KV slots past a request's scheduled tokens its proposer writes: a drafting model's passes run up to k
  // positions ahead (the n-gram proposer writes none). The scheduler allocates them with the step.
  int num_lookahead_tokens() const { return method == SpecMethod::Ngram ? 0 : num_speculative_tokens; }
};

}  // namespace parley
