// The scheduler's admission: what a request must be to be queued, and the batch rows and queue places it takes
// (a parent awaiting its delayed split reserves a row per child; the waiting bound counts sequences).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/kv_connector_scheduler.hpp"
#include "engine/scheduler.hpp"

namespace parley {

void Scheduler::add_request(Request request) {
  check_request(request);
  if (num_waiting_sequences() + rows_of(request) > config_.max_waiting)
    throw QueueFull("the waiting queue is full (" + std::to_string(config_.max_waiting) + " sequences)");
  if (request.awaits_split() && !config_.enable_delayed_split) {  // n independent requests, child i its own seed
    for (size_t i = 0; i < request.child_req_ids.size(); ++i) {
      SamplingParams p = request.sampling_params;
      p.n = 1;
      Request child(request.child_req_ids[i], request.prompt_token_ids, p, request.child_seeds[i],
                    request.arrival_time);
      child.parent_req_id = request.request_id;
      add_request(std::move(child));
    }
    return;
  }
  request.status = RequestStatus::Waiting;
  request.worker_knows = false;
  auto owned = std::make_unique<Request>(std::move(request));
  waiting_.push_back(owned.get());
  count_live(*owned, 1);
  requests_.emplace(owned->request_id, std::move(owned));
}

void Scheduler::check_request(const Request& request) const {
  const std::string& id = request.request_id;
  if (requests_.count(id) || (connector_ && connector_->holds(id)))
    throw std::invalid_argument("request id " + id + " is already in use");
  if (request.prompt_token_ids.empty()) throw std::invalid_argument("the prompt is empty");
  if (request.is_pooling() && config_.pooling == PoolingType::None)
    throw std::invalid_argument("this model does not pool (a pooling type and --task embed are needed)");
  if (request.is_pooling() &&
      (request.pooling_params->task == PoolingTask::Score) != (config_.pooling == PoolingType::Rank))
    throw std::invalid_argument(config_.pooling == PoolingType::Rank
                                    ? "this model reranks (--task rerank): it scores, not embeds"
                                    : "this model embeds: scores need a reranker (--task rerank)");
  // A pooling request samples nothing: its prompt may fill the context.
  if (request.num_tokens() >= config_.max_model_len + (request.is_pooling() ? 1 : 0))
    throw std::invalid_argument("the prompt has " + std::to_string(request.num_tokens()) +
                                " tokens; the context holds " + std::to_string(config_.max_model_len));
  if (config_.bidirectional && request.num_tokens() > config_.max_num_batched_tokens)
    throw std::invalid_argument("the input has " + std::to_string(request.num_tokens()) +
                                " tokens; this model reads an input whole in one step, which holds " +
                                std::to_string(config_.max_num_batched_tokens) + " (--max-num-batched-tokens)");
  if (config_.vocab_size > 0)
    for (int t : request.prompt_token_ids)
      if (t < 0 || t >= config_.vocab_size)
        throw std::invalid_argument("token id " + std::to_string(t) + " is outside the vocabulary of " +
                                    std::to_string(config_.vocab_size));
  // Drafts in verification and a drafting model's lookahead may reach past the last output token.
  const int longest =
      std::min(request.num_prompt_tokens() + (request.is_pooling() ? 0 : request.sampling_params.max_tokens) +
                   config_.num_speculative_tokens + config_.num_lookahead_tokens,
               config_.max_model_len);
  const int step_tokens =
      config_.max_num_batched_tokens + config_.num_speculative_tokens + config_.num_lookahead_tokens;
  const int most_blocks = kv_.max_blocks_held(longest, step_tokens);
  if (most_blocks > kv_.block_pool().num_usable_blocks())
    throw std::invalid_argument("the request may need " + std::to_string(most_blocks) +
                                " KV blocks but the cache has " + std::to_string(kv_.block_pool().num_usable_blocks()));
  check_children(request);
  if (request.sampling_params.prompt_logprobs && !config_.prompt_logprobs_refusal.empty())
    throw std::invalid_argument(config_.prompt_logprobs_refusal);
}

void Scheduler::check_children(const Request& r) const {
  const size_t n = size_t(std::max(1, r.sampling_params.n));
  if (n == 1 && r.child_req_ids.empty()) return;
  if (int(n) > config_.max_num_seqs)  // its children could never run side by side after the split
    throw std::invalid_argument("n = " + std::to_string(n) + " is more than max_num_seqs = " +
                                std::to_string(config_.max_num_seqs) + ", the most sequences a batch runs");
  if (r.child_req_ids.size() != n || r.child_seeds.size() != n || r.child_req_ids[0] != r.request_id)
    throw std::invalid_argument("request " + r.request_id + ": n = " + std::to_string(n) +
                                " needs that many child ids (the first its own) and seeds");
  for (size_t i = 1; i < n; ++i)
    if (requests_.count(r.child_req_ids[i]) || std::find(r.child_req_ids.begin(), r.child_req_ids.begin() + long(i),
                                                         r.child_req_ids[i]) != r.child_req_ids.begin() + long(i))
      throw std::invalid_argument("request id " + r.child_req_ids[i] + " is already in use");
}

int Scheduler::rows_of(const Request& r) {
  // A prefill instance hands the parent off before its split: the children run on the decode instance.
  return r.awaits_split() && r.kv_transfer != KvTransfer::ToDecode ? int(r.child_req_ids.size()) : 1;
}

int Scheduler::num_rows() const {
  int rows = 0;
  for (const Request* r : running_) rows += rows_of(*r);
  for (const Request* r : waiting_for_remote_kv()) rows += rows_of(*r);
  return rows;
}

int Scheduler::num_waiting_sequences() const {
  int seqs = 0;
  for (const Request* r : waiting_) seqs += rows_of(*r);
  return seqs;
}

}  // namespace parley
