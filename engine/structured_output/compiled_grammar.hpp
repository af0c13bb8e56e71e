// A grammar bound to a vocabulary: which tokens may come next in a state, computed by one trie walk and
// cached per state (inside a JSON string every character leads back to the same state, so most steps
// reuse a mask), and the per-request matcher the sampler consults (vLLM's StructuredOutputGrammar).
// The mask is a function of the grammar and the tokens so far alone: batch-invariant by construction.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/structured_output/grammar_vocabulary.hpp"
#include "engine/structured_output/pushdown.hpp"

namespace parley::structured {

using TokenBitmask = std::vector<uint64_t>;  // bit t set: token t allowed

inline bool token_allowed(const TokenBitmask& mask, int token) {
  return (mask[size_t(token) >> 6] >> (token & 63)) & 1;
}

// Process-wide counters for the metrics endpoint.
struct StructuredOutputStats {
  std::atomic<int64_t> masks_applied{0};     // sampled positions that had a grammar
  std::atomic<int64_t> mask_nanoseconds{0};  // time spent computing and applying those masks
  std::atomic<int64_t> masks_computed{0};    // trie walks (cache misses)
  std::atomic<int64_t> masks_prefetched{0};  // of those, walked while the forward pass ran (MaskPrefetch)
};
StructuredOutputStats& structured_output_stats();

class CompiledGrammar {
 public:
  static constexpr int kDead = PushdownAutomaton::kDead;

  CompiledGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GrammarVocabulary> vocabulary);

  int initial_state();
  int accept_token(int state, int token);  // kDead when the grammar refuses the token's bytes
  int accept_bytes(int state, std::string_view bytes);
  bool accepting(int state);     // the text so far is complete
  bool can_continue(int state);  // more text may follow
  // The tokens whose bytes the grammar accepts next in `state` (end tokens are the matcher's business).
  std::shared_ptr<const TokenBitmask> allowed_tokens(int state);
  bool has_mask(int state);
  const GrammarVocabulary& vocabulary() const { return *vocabulary_; }

 private:
  std::shared_ptr<const TokenBitmask> compute_mask(int state);  // under mutex_

  std::shared_ptr<const GrammarVocabulary> vocabulary_;
  std::mutex mutex_;  // workers of several data-parallel engines share a compiled grammar
  PushdownAutomaton automaton_;
  std::unordered_map<int, std::shared_ptr<const TokenBitmask>> masks_;
  std::vector<int> walk_states_;
};

// One request's position in its grammar, derived from its output tokens.
class StructuredOutputGrammar {
 public:
  // end_tokens (EOS and the request's stop tokens) are allowed exactly where the text is complete. The grammar
  // begins after starts_after's first occurrence in the output (empty: at once); until then nothing is masked.
  StructuredOutputGrammar(std::shared_ptr<CompiledGrammar> grammar, std::vector<int> end_tokens,
                          std::vector<int> starts_after = {});

  // Catches up with the output so far: feeds the tokens appended since the last call, or rolls back
  // when there are fewer (a token the grammar refuses leaves only the end tokens allowed).
  void sync(std::span<const int> output_token_ids);
  // Sets every logit the grammar forbids next to -inf.
  void apply_mask(float* logits, int vocab_size);
  // Complete and nothing more may follow (or a refused token): only an end token can come next.
  bool is_terminated();
  // The current state's mask is not cached yet (after sync): prefetch_mask would walk the trie.
  bool mask_missing() { return constrained() && !grammar_->has_mask(state()); }
  // Computes and caches the current state's mask, so that apply_mask finds it (MaskPrefetch's thread).
  void prefetch_mask();

 private:
  int state() const { return states_.back(); }
  bool constrained() const { return free_tokens_ != kNotYet; }
  static constexpr size_t kNotYet = SIZE_MAX;

  std::shared_ptr<CompiledGrammar> grammar_;
  std::vector<int> end_tokens_;
  std::vector<int> starts_after_;
  size_t free_tokens_ = 0;                        // output tokens before the grammar's first; kNotYet: not begun
  std::vector<int> states_;                       // states_[k]: after k constrained output tokens
  std::vector<std::pair<int, float>> kept_ends_;  // apply_mask's scratch, reused every token
};

}  // namespace parley::structured
