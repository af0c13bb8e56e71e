// What moves between scheduler, worker and output processor each step (vLLM v1's SchedulerOutput,
// ModelRunnerOutput and EngineCoreOutput). Plain data: the actors pass these in messages.
#pragma once
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/kv_cache_utils.hpp"
#include "engine/request.hpp"
#include "engine/sampling_params.hpp"
#include "engine/token_logprobs.hpp"

namespace parley {

// A request the worker has not seen, or one resumed after preemption (its state was dropped then).
struct NewRequestData {
  std::string req_id;
  std::vector<int> prompt_token_ids;
  std::vector<int> output_token_ids;  // tokens already generated (non-empty only when resumed)
  SamplingParams sampling_params;
  uint64_t seed = 0;
  GroupBlockIds block_ids;      // every block it holds now, per KV group
  int num_computed_tokens = 0;  // prefix-cache hits: KV already there
  // n > 1 before its delayed split: when its prefill ends, the worker samples one first token per seed
  // from the same logits (child i's generator); empty for an ordinary request.
  std::vector<uint64_t> child_seeds;
  std::optional<PoolingParams> pooling_params;  // a pooling request: its prompt is pooled, nothing sampled
};

// A request the worker already holds: only what changed.
struct CachedRequestData {
  std::string req_id;
  GroupBlockIds new_block_ids;  // appended to its block table of each KV group (empty: none)
  int num_computed_tokens = 0;  // before this step's tokens
};

struct SchedulerOutput {
  std::vector<NewRequestData> scheduled_new_reqs;
  std::vector<CachedRequestData> scheduled_cached_reqs;
  // Tokens to compute this step per request (the worker finds each by id; the order carries no meaning).
  std::vector<std::pair<std::string, int>> num_scheduled_tokens;
  int total_num_scheduled_tokens = 0;
  // Speculative decoding: how many of a decode request's scheduled tokens are drafts (its query is its
  // newest token plus these). The worker fills them from its own proposer, padding with placeholder drafts
  // (always rejected) when it has fewer. Requests not listed verify nothing.
  std::vector<std::pair<std::string, int>> scheduled_spec_decode_tokens;
  // Requests the worker must drop before this step: finished or aborted since the last step, or preempted.
  std::vector<std::string> finished_req_ids;
  std::vector<std::string> preempted_req_ids;
  // (src, dst) KV blocks to copy before the forward pass: a split child's copy of the prompt's partial block.
  std::vector<std::pair<int, int>> block_copies;
  uint64_t step_id = 0;  // numbers steps with work, from 1; the output carries it back
  // After a lost step: the worker drops every request it holds before this step (they return as new ones).
  bool reset_batch = false;

  bool empty() const { return total_num_scheduled_tokens == 0; }
  // Anything for the worker to do or hear: otherwise the step is not sent (and gets no number).
  bool has_work() const {
    return total_num_scheduled_tokens > 0 || !finished_req_ids.empty() || !preempted_req_ids.empty() ||
           !block_copies.empty() || reset_batch;
  }
};

// A step the runner could not run: why, and the request whose own fault it was (empty: the engine's).
struct StepFailure {
  std::string what;
  std::string req_id;
};

// A step's results per entry of its SchedulerOutput::num_scheduled_tokens, in that order: the scheduler reads
// entry i as the request it scheduled i-th, with no lookup, and the tokens travel in one array.
struct ModelRunnerOutput {
  uint64_t step_id = 0;
  // Entry i's tokens are sampled_token_ids[token_offsets[i], token_offsets[i + 1]): none for a partial prefill;
  // one token; a verifying row's accepted drafts and one more; or, for a splitting parent, child c's first at c.
  std::vector<int> sampled_token_ids;
  std::vector<int> token_offsets;  // entries + 1 (empty: no entries)
  // Per entry, each only when some entry has one (else empty): a sampled token's logprobs when the request
  // asked; the prompt tokens this step scored; with a proposer, the drafts verified this step that it made
  // (placeholders not counted) and the drafts ready for its next step.
  std::vector<std::vector<TokenLogprobs>> logprobs;
  std::vector<PromptLogprobsChunk> prompt_logprobs;
  std::vector<int> num_proposed_drafts, num_drafts_ready;
  // A pooling request's vector, in the step that computed its prompt's last token (else empty).
  std::vector<std::vector<float>> pooled;
  bool ran_graph = false;  // the pass replayed a captured device graph (CUDA full graphs) rather than running eagerly
  std::optional<StepFailure> failure;  // set: the step did not run, and nothing else here holds

  size_t num_entries() const { return token_offsets.empty() ? 0 : token_offsets.size() - 1; }
  std::span<const int> sampled(size_t entry) const {
    return {sampled_token_ids.data() + token_offsets[entry], size_t(token_offsets[entry + 1] - token_offsets[entry])};
  }
  // Appends the next entry's tokens (entries are added in order).
  void add_entry(std::span<const int> tokens) {
    if (token_offsets.empty()) token_offsets.push_back(0);
    sampled_token_ids.insert(sampled_token_ids.end(), tokens.begin(), tokens.end());
    token_offsets.push_back(int(sampled_token_ids.size()));
  }
};

// One request's news after a step, for the output processor.
struct EngineCoreOutput {
  std::string req_id;
  std::vector<int> new_token_ids;
  std::vector<TokenLogprobs> new_logprobs;  // one per new token when the request asked for logprobs
  // With a request's first token(s), when it asked for prompt_logprobs: prompt tokens 1.. (the first has none).
  std::vector<TokenLogprobs> prompt_logprobs;
  FinishReason finish_reason = FinishReason::None;
  std::optional<int> stop_token;  // the stop token id (stop_reason), if that ended it
  int num_cached_tokens = 0;      // prompt tokens served from the prefix cache
  std::string error;              // with finish Abort: the engine failed the request (not its client); why
  std::vector<float> pooled;      // a pooling request's vector, with its finish (Stop)

  bool finished() const { return finish_reason != FinishReason::None; }
};

// The output of a step that threw `e` (a RequestFailure names its request).
inline ModelRunnerOutput failed_step(uint64_t step_id, const std::exception& e) {
  ModelRunnerOutput out;
  out.step_id = step_id;
  const auto* own = dynamic_cast<const RequestFailure*>(&e);
  out.failure = StepFailure{e.what(), own ? own->req_id : std::string()};
  return out;
}

}  // namespace parley
