// Per-request sampling parameters, as vLLM's SamplingParams (vllm/sampling_params.py).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace parley {
namespace structured {
class Grammar;  // engine/structured_output/grammar.hpp
}

inline constexpr int kMaxLogprobs = 20;  // vLLM's default max_logprobs

// vLLM's StructuredOutputsParams: one constraint on the output text, kept as text so it crosses
// processes (PD) and is compiled where it is sampled (engine/structured_output/).
struct StructuredOutputsParams {
  enum class Kind { Json, JsonObject, Regex, Choice, Grammar };
  Kind kind = Kind::JsonObject;
  // Json: a JSON Schema as JSON text; JsonObject: empty (any JSON object); Regex: the pattern;
  // Choice: a JSON array of strings; Grammar: GBNF text (engine/structured_output/grammar.hpp).
  std::string spec;
  // The constraint begins after these tokens first appear in the output (a reasoning's end marker, as vLLM's
  // reasoning-aware structured outputs); the tokens up to them are free. Empty: from the first token.
  std::vector<int> starts_after;
  // The grammar the server parsed when it checked the request, so the worker only binds it to its vocabulary.
  // Null when the request came another way (a decode instance, a test): the worker compiles the spec itself.
  std::shared_ptr<const structured::Grammar> grammar;
  // The constraint, not how far it got: two requests with the same spec are equal whoever compiled them.
  bool operator==(const StructuredOutputsParams& o) const {
    return kind == o.kind && spec == o.spec && starts_after == o.starts_after;
  }
};

struct SamplingParams {
  // The fields the scheduler reads every step first (Request's hot cache lines reach into them).
  int max_tokens = 16;
  int min_tokens = 0;  // stop tokens (EOS and stop_token_ids) are masked until this many are out
  bool ignore_eos = false;
  std::vector<int> stop_token_ids;  // besides EOS; ends the request (the token is kept in the output)
  int n = 1;                        // samples per prompt; sample i uses seed + i
  float temperature = 1.0f;         // below 1e-5 means greedy, as vLLM's _SAMPLING_EPS
  int top_k = -1;                   // -1 (or 0) keeps every token
  float top_p = 1.0f;               // nucleus mass in (0, 1]
  float min_p = 0.0f;               // drop tokens below min_p * the top probability
  float presence_penalty = 0.0f;    // [-2, 2]: subtracted once from each token already generated
  float frequency_penalty = 0.0f;   // [-2, 2]: subtracted per occurrence in the output
  float repetition_penalty = 1.0f;  // (0, 2]: divides positive / multiplies negative logits of prompt+output tokens
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;  // stop strings, matched on the detokenized text
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;     // control tokens decode to nothing (false: to their text, e.g. [TOOL_CALLS])
  std::optional<int> logprobs;         // top logprobs per output token (0: only the sampled token's)
  std::optional<int> prompt_logprobs;  // top logprobs per prompt token after the first (0: only the prompt token's)
  std::vector<std::pair<int, float>> logit_bias;              // (token id, bias) sorted by id, added to the raw logits
  std::optional<StructuredOutputsParams> structured_outputs;  // the output must match it (a logits mask)

  bool greedy() const { return temperature < 1e-5f; }
  bool has_penalties() const {
    return presence_penalty != 0.0f || frequency_penalty != 0.0f || repetition_penalty != 1.0f;
  }
  // Throws std::invalid_argument with vLLM's wording for the first invalid field. vocab_size > 0 also
  // checks token ids in logit_bias and stop_token_ids.
  void validate(int vocab_size = 0) const;
};

}  // namespace parley
