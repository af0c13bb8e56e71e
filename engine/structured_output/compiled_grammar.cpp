#include "engine/structured_output/compiled_grammar.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace parley::structured {
namespace {

constexpr size_t kMaxCachedMaskBytes = size_t(64) << 20;  // per compiled grammar; masks are recomputable

}  // namespace

StructuredOutputStats& structured_output_stats() {
  static StructuredOutputStats stats;
  return stats;
}

CompiledGrammar::CompiledGrammar(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const GrammarVocabulary> vocabulary)
    : vocabulary_(std::move(vocabulary)), automaton_(std::move(grammar)) {}

int CompiledGrammar::initial_state() {
  std::lock_guard lock(mutex_);
  return automaton_.initial_state();
}

int CompiledGrammar::accept_token(int state, int token) {
  if (token < 0 || token >= vocabulary_->size() || !vocabulary_->bytes(token)) return kDead;
  return accept_bytes(state, *vocabulary_->bytes(token));
}

int CompiledGrammar::accept_bytes(int state, std::string_view bytes) {
  if (state == kDead) return kDead;
  std::lock_guard lock(mutex_);
  return automaton_.advance(state, bytes);
}

bool CompiledGrammar::accepting(int state) {
  std::lock_guard lock(mutex_);
  return state != kDead && automaton_.accepting(state);
}

bool CompiledGrammar::can_continue(int state) {
  std::lock_guard lock(mutex_);
  return state != kDead && automaton_.can_continue(state);
}

std::shared_ptr<const TokenBitmask> CompiledGrammar::allowed_tokens(int state) {
  std::lock_guard lock(mutex_);
  if (const auto it = masks_.find(state); it != masks_.end()) return it->second;
  auto mask = compute_mask(state);
  const size_t mask_bytes = mask->size() * sizeof(uint64_t);
  if ((masks_.size() + 1) * mask_bytes > kMaxCachedMaskBytes) masks_.clear();
  masks_.emplace(state, mask);
  return mask;
}

bool CompiledGrammar::has_mask(int state) {
  std::lock_guard lock(mutex_);
  return masks_.count(state) > 0;
}

// One preorder walk of the trie: walk_states_[d] is the state after the first d bytes of the current path.
std::shared_ptr<const TokenBitmask> CompiledGrammar::compute_mask(int state) {
  structured_output_stats().masks_computed.fetch_add(1, std::memory_order_relaxed);
  auto mask = std::make_shared<TokenBitmask>((size_t(vocabulary_->size()) + 63) / 64, 0);
  if (state == kDead) return mask;
  const auto& trie = vocabulary_->trie();
  const auto& tokens = vocabulary_->trie_tokens();
  walk_states_.resize(size_t(vocabulary_->max_depth()) + 1);
  walk_states_[0] = state;
  for (int i = 0; i < int(trie.size());) {
    const GrammarVocabulary::TrieNode& node = trie[size_t(i)];
    const int next = automaton_.advance(walk_states_[size_t(node.depth - 1)], node.byte);
    if (next == kDead) {
      i = node.subtree_end;
      continue;
    }
    walk_states_[size_t(node.depth)] = next;
    for (int k = node.tokens_begin; k < node.tokens_end; ++k)
      (*mask)[size_t(tokens[size_t(k)]) >> 6] |= uint64_t(1) << (tokens[size_t(k)] & 63);
    ++i;
  }
  return mask;
}

StructuredOutputGrammar::StructuredOutputGrammar(std::shared_ptr<CompiledGrammar> grammar, std::vector<int> end_tokens,
                                                 std::vector<int> starts_after)
    : grammar_(std::move(grammar)),
      end_tokens_(std::move(end_tokens)),
      starts_after_(std::move(starts_after)),
      free_tokens_(starts_after_.empty() ? 0 : kNotYet) {
  states_.push_back(grammar_->initial_state());
}

void StructuredOutputGrammar::sync(std::span<const int> output_token_ids) {
  if (!starts_after_.empty()) {
    if (free_tokens_ != kNotYet && output_token_ids.size() < free_tokens_) {  // a rollback took the marker back
      free_tokens_ = kNotYet;
      states_.resize(1);
    }
    if (free_tokens_ == kNotYet) {  // searched until found; once found, the constrained tokens cost nothing more
      const auto at =
          std::search(output_token_ids.begin(), output_token_ids.end(), starts_after_.begin(), starts_after_.end());
      if (at == output_token_ids.end()) return;
      free_tokens_ = size_t(at - output_token_ids.begin()) + starts_after_.size();
    }
    output_token_ids = output_token_ids.subspan(free_tokens_);
  }
  if (output_token_ids.size() + 1 < states_.size()) states_.resize(output_token_ids.size() + 1);
  for (size_t k = states_.size() - 1; k < output_token_ids.size(); ++k) {
    const int token = output_token_ids[k];
    const bool ends = std::find(end_tokens_.begin(), end_tokens_.end(), token) != end_tokens_.end();
    states_.push_back(ends && grammar_->accepting(state()) ? state() : grammar_->accept_token(state(), token));
  }
}

void StructuredOutputGrammar::prefetch_mask() {
  if (!mask_missing()) return;
  grammar_->allowed_tokens(state());
  structured_output_stats().masks_prefetched.fetch_add(1, std::memory_order_relaxed);
}

bool StructuredOutputGrammar::is_terminated() {
  return constrained() &&
         (state() == CompiledGrammar::kDead || (grammar_->accepting(state()) && !grammar_->can_continue(state())));
}

void StructuredOutputGrammar::apply_mask(float* logits, int vocab_size) {
  if (!constrained()) return;
  const auto start = std::chrono::steady_clock::now();
  const std::shared_ptr<const TokenBitmask> mask = grammar_->allowed_tokens(state());
  const int known = std::min(vocab_size, grammar_->vocabulary().size());
  const bool complete = state() == CompiledGrammar::kDead || grammar_->accepting(state());
  kept_ends_.clear();  // end tokens keep their logits through the mask where the text is complete
  if (complete)
    for (int t : end_tokens_)
      if (t >= 0 && t < vocab_size) kept_ends_.emplace_back(t, logits[t]);
  for (int word = 0; word * 64 < known; ++word) {  // 64 tokens at a time: inside a string most words are all allowed
    const uint64_t bits = (*mask)[size_t(word)];
    const int first = word * 64, last = std::min(known, first + 64);
    if (bits == ~uint64_t(0) && last - first == 64) continue;
    if (bits == 0) {  // outside strings most words are all forbidden
      std::fill(logits + first, logits + last, -INFINITY);
      continue;
    }
    for (int t = first; t < last; ++t)
      if (!((bits >> (t - first)) & 1)) logits[t] = -INFINITY;
  }
  for (int t = known; t < vocab_size; ++t) logits[t] = -INFINITY;  // padding rows of the output layer
  for (const auto& [t, value] : kept_ends_) logits[t] = value;
  auto& stats = structured_output_stats();
  stats.masks_applied.fetch_add(1, std::memory_order_relaxed);
  stats.mask_nanoseconds.fetch_add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count(),
      std::memory_order_relaxed);
}

}  // namespace parley::structured
