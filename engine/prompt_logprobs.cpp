#include "engine/prompt_logprobs.hpp"

#include <algorithm>

#include "engine/sampler.hpp"
#include "engine/scheduler.hpp"

namespace parley {

void PromptLogprobsRows::add(int row, int start, int end, int num_prompt, int first_index) {
  // Position p's logits predict token p + 1: positions [start, end) score tokens start + 1 .. end of the prompt.
  const int count = std::min(end, num_prompt - 1) - start;
  if (count > 0) rows_.push_back({row, start + 1, first_index, count});
}

void PromptLogprobsRows::append_logits_indices(std::vector<int>& logits_indices) {
  for (Rows& r : rows_) {
    r.first_logits_row = int(logits_indices.size());
    for (int i = 0; i < r.count; ++i) logits_indices.push_back(r.first_index + i);
  }
}

void PromptLogprobsRows::score(std::span<const float> logits, int vocab, const InputBatch& batch,
                               std::vector<PromptLogprobsChunk>& per_row) const {
  for (const Rows& r : rows_) {
    const auto tokens = batch.token_ids(r.row);
    const int num_top = batch.sampling_params(r.row).prompt_logprobs.value_or(0);
    PromptLogprobsChunk& chunk = per_row.at(size_t(r.row));
    chunk.first_token = r.first_token;
    for (int i = 0; i < r.count; ++i) {
      const float* row = logits.data() + size_t(r.first_logits_row + i) * size_t(vocab);
      chunk.entries.push_back(compute_token_logprobs(row, vocab, tokens[size_t(r.first_token + i)], num_top));
    }
  }
}

void collect_prompt_logprobs(std::vector<TokenLogprobs>& collected, const PromptLogprobsChunk& chunk) {
  const int next = 1 + int(collected.size());  // the prompt token the next entry scores
  const int end = chunk.first_token + int(chunk.entries.size());
  if (chunk.first_token > next || end <= next) return;
  collected.insert(collected.end(), chunk.entries.begin() + (next - chunk.first_token), chunk.entries.end());
}

// The scheduler's side (declared in scheduler.hpp): a step's chunk joins the request it was computed for.
void Scheduler::take_prompt_logprobs(Request& r, const PromptLogprobsChunk& chunk) {
  if (!chunk.entries.empty() && wants_prompt_logprobs(r.sampling_params, r.output_token_ids.size()))
    collect_prompt_logprobs(r.prompt_logprobs, chunk);
}

}  // namespace parley
