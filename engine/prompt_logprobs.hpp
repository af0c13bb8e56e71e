// Prompt logprobs (vLLM's prompt_logprobs; OpenAI's echo with logprobs): for every prompt token after the
// first, its logprob, rank and the top alternatives given the tokens before it, from the raw logits at the
// position before it, exactly as a sampled token's (compute_token_logprobs). A request that wants them takes
// no prefix-cache hits for its prompt, so every position is computed (its blocks still join the cache).
// The worker half picks the logits rows a step needs and scores them; the scheduler half keeps a request's
// chunks in order and once (chunked prefill, preemption, steps in flight) until its first token takes them.
#pragma once
#include <cstddef>
#include <span>
#include <vector>

#include "engine/input_batch.hpp"
#include "engine/outputs.hpp"
#include "engine/sampling_params.hpp"

namespace parley {

// Whether a request still needs its prompt's logprobs: it asked, and has no token yet (they go with the first).
inline bool wants_prompt_logprobs(const SamplingParams& params, size_t num_output_tokens) {
  return params.prompt_logprobs.has_value() && num_output_tokens == 0;
}

// Worker half: the logits rows of one step's prompt positions, placed after every row the step samples.
class PromptLogprobsRows {
 public:
  void clear() { rows_.clear(); }
  // Batch row `row` computes tokens [start, end) of its prompt of num_prompt tokens, token `start` at index
  // first_index of the flattened batch: each position with a prompt token after it needs its logits.
  void add(int row, int start, int end, int num_prompt, int first_index);
  // Appends the logits indices of every row added, after those already there (the sampled and verifying rows').
  void append_logits_indices(std::vector<int>& logits_indices);
  // Scores each prompt token from its logits row (logits: all of the step's rows, vocab wide) into its batch row's
  // chunk.
  void score(std::span<const float> logits, int vocab, const InputBatch& batch,
             std::vector<PromptLogprobsChunk>& per_row) const;

 private:
  struct Rows {
    int row, first_token, first_index, count;
    int first_logits_row = 0;
  };
  std::vector<Rows> rows_;
};

// Scheduler half: appends to `collected` (prompt tokens 1.. so far) what `chunk` adds past it. A chunk computed
// again after a preemption repeats entries already there: they are kept once. A chunk that starts past the
// next token (a gap) adds nothing.
void collect_prompt_logprobs(std::vector<TokenLogprobs>& collected, const PromptLogprobsChunk& chunk);

}  // namespace parley
