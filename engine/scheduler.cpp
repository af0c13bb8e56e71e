#include "engine/scheduler.hpp"

#include "engine/kv_connector_scheduler.hpp"
#include "engine/prompt_logprobs.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace parley {

void SchedulerConfig::validate() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
  };
  need(max_num_batched_tokens >= 1, "max_num_batched_tokens must be at least 1");
  need(max_num_seqs >= 1, "max_num_seqs must be at least 1");
  need(max_model_len >= 2, "max_model_len must be at least 2");
  need(long_prefill_token_threshold >= 0, "long_prefill_token_threshold must be 0 (off) or positive");
  need(max_waiting >= 1, "max_waiting must be at least 1");
  need(block_size >= 1, "block_size must be at least 1");
  need(num_kv_blocks >= 1, "num_kv_blocks must be at least 1");
  need(num_speculative_tokens >= 0 && num_speculative_tokens <= 16, "num_speculative_tokens must be in [0, 16]");
  need(num_lookahead_tokens >= 0 && num_lookahead_tokens <= 16, "num_lookahead_tokens must be in [0, 16]");
  need(!bidirectional || !enable_prefix_caching, "a bidirectional model cannot cache prefixes");
}

Scheduler::Scheduler(SchedulerConfig config)
    : config_((config.validate(), std::move(config))),
      kv_(config_.num_kv_blocks, config_.block_size, config_.enable_prefix_caching, config_.kv_group_windows) {}

const Request* Scheduler::find(const std::string& req_id) const {
  auto it = requests_.find(req_id);
  return it == requests_.end() ? nullptr : it->second.get();
}

std::vector<const Request*> Scheduler::requests() const {
  std::vector<const Request*> out(running_.begin(), running_.end());
  out.insert(out.end(), waiting_.begin(), waiting_.end());
  out.insert(out.end(), waiting_for_remote_kv().begin(), waiting_for_remote_kv().end());
  return out;
}

void Scheduler::mark_outputs_stale(Request& request) {
  for (PlannedStep& step : planned_steps_)
    for (Scheduled& s : step.scheduled)
      if (s.request == &request) s.request = nullptr;
  if (request.num_output_placeholders > 0) stale_outputs_[request.request_id] += request.num_output_placeholders;
  request.num_output_placeholders = 0;
  request.num_draft_placeholders = 0;
}

int Scheduler::num_stale_outputs() const {
  int n = 0;
  for (const auto& [id, count] : stale_outputs_) n += count;
  return n;
}

void Scheduler::preempt(Request& request) {
  kv_.free(request);
  requeue(request);
  ++request.num_preemptions;
  ++num_preemptions_;
}

void Scheduler::requeue(Request& request) {
  // The recompute samples any token still in flight again, identically: draws are keyed by (seed, position).
  mark_outputs_stale(request);
  request.status = RequestStatus::Preempted;
  request.num_computed_tokens = 0;  // recompute: prompt and output so far are prefilled again
  waiting_.push_front(&request);
}

void Scheduler::free_request(Request& request) {
  mark_outputs_stale(request);
  kv_.free(request);
  std::erase(running_, &request);
  std::erase(waiting_, &request);
  if (connector_) connector_->stop_waiting(request);
  if (forget_worker_knows(request)) finished_req_ids_.push_back(request.request_id);
  count_live(request, -1);
  requests_.erase(request.request_id);  // destroys the request: last use
}

std::vector<std::string> Scheduler::finish_requests(const std::vector<std::string>& req_ids, RequestStatus status) {
  if (!is_finished(status)) throw std::invalid_argument("finish_requests needs a finished status");
  std::vector<std::string> live;
  for (const auto& id : req_ids) {
    auto it = requests_.find(id);
    if (it == requests_.end()) continue;
    Request& r = *it->second;
    r.status = status;
    if (r.awaits_split())
      live.insert(live.end(), r.child_req_ids.begin(), r.child_req_ids.end());
    else
      live.push_back(id);
    free_request(r);
  }
  return live;
}

SchedulerOutput Scheduler::schedule() {
  PhaseTimer timer(profile_, StepPhase::Schedule);
  SchedulerOutput out;
  out.reset_batch = std::exchange(reset_batch_, false);
  out.finished_req_ids = std::move(finished_req_ids_);
  finished_req_ids_.clear();
  out.block_copies = std::move(pending_block_copies_);
  pending_block_copies_.clear();
  int budget = config_.max_num_batched_tokens;
  std::vector<Scheduled>& scheduled_running = scheduled_running_;
  std::vector<Scheduled>& scheduled_new = scheduled_new_;
  scheduled_running.clear(), scheduled_new.clear();
  // Room for every request this step may schedule: no regrowth while filling.
  const size_t most = std::min(running_.size() + waiting_.size(), size_t(config_.max_num_seqs) + running_.size());
  out.scheduled_cached_reqs.reserve(running_.size());
  out.num_scheduled_tokens.reserve(most);
  bool all_decode = true;  // every running request scheduled decodes (its newest token, plus drafts)
  auto chunk = [&](const Request& r, int num_computed) {
    // A prefill remainder, or the one newest token (a placeholder when its step is still in flight).
    int n = r.num_tokens() + r.num_output_placeholders + r.num_draft_placeholders - num_computed;
    if (config_.bidirectional) return n <= budget ? n : 0;  // whole or not at all
    if (config_.long_prefill_token_threshold > 0) n = std::min(n, config_.long_prefill_token_threshold);
    return std::min(n, budget);
  };

  // Running requests first, oldest first; blocks for them come from preempting the newest.
  bool preempted = false;
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Request* r = running_[i];
    int n = certain_to_finish(*r) ? 0 : chunk(*r, r->num_computed_tokens);
    const bool decode = n == 1 && !r->awaits_split();
    const int drafts = decode ? num_drafts_for(*r, budget - 1) : 0;
    n += drafts;
    if (n <= 0) {
      ++i;
      continue;
    }
    bool allocated =
        kv_.allocate_slots(*r, with_lookahead(r->num_computed_tokens, n), {}, true, r->num_draft_placeholders);
    while (!allocated) {
      Request* victim = running_.back();
      running_.pop_back();
      preempt(*victim);
      preempted = true;
      if (forget_worker_knows(*victim)) out.preempted_req_ids.push_back(victim->request_id);
      if (victim == r) break;
      allocated =
          kv_.allocate_slots(*r, with_lookahead(r->num_computed_tokens, n), {}, true, r->num_draft_placeholders);
    }
    if (!allocated) break;  // r was the newest left and went back to waiting
    if (r->worker_knows) {
      out.scheduled_cached_reqs.push_back({r->request_id, kv_.take_new_block_ids(*r), r->num_computed_tokens});
    } else {  // a split child: the worker meets it now, with the blocks it shares
      kv_.take_new_block_ids(*r);
      r->worker_knows = true;
      out.scheduled_new_reqs.push_back({r->request_id,
                                        r->prompt_token_ids,
                                        r->output_token_ids,
                                        r->sampling_params,
                                        r->seed,
                                        kv_.block_ids(*r),
                                        r->num_computed_tokens,
                                        {},
                                        r->pooling_params});
    }
    scheduled_running.push_back({r, n, drafts});
    all_decode = all_decode && decode;
    budget -= n;
    ++i;
  }

  // Then waiting requests in arrival order (preempted ones first), unless this step had to preempt, while their
  // rows fit: a parent's children join the batch when it splits.
  int rows = num_rows();
  while (!preempted && !waiting_.empty() && budget > 0 && rows + rows_of(*waiting_.front()) <= config_.max_num_seqs) {
    Request* r = waiting_.front();
    rows += rows_of(*r);
    if (r->kv_transfer == KvTransfer::FromPrefill) {  // no token computed here: blocks for the KV to arrive
      if (!admit_remote(*r)) break;
      continue;
    }
    // Prompt logprobs need every prompt position computed: no prefix hits then (as vLLM).
    const bool reads_cache = !wants_prompt_logprobs(r->sampling_params, r->output_token_ids.size()) &&
                             (!r->is_pooling() || config_.pooled_positions == PoolingType::Last);
    int num_hit = 0;
    KVCacheBlocks hits = reads_cache ? kv_.get_computed_blocks(*r, &num_hit) : KVCacheBlocks{};
    const int n = chunk(*r, num_hit);
    if (n == 0) break;  // a whole prompt waits for a step with room for it
    if (!kv_.allocate_slots(*r, with_lookahead(num_hit, n), hits)) break;
    waiting_.pop_front();
    if (reads_cache) kv_.record_prefix_lookup(r->num_tokens(), num_hit);
    kv_.take_new_block_ids(*r);
    r->num_computed_tokens = num_hit;
    if (r->num_cached_tokens < 0) r->num_cached_tokens = num_hit;
    r->status = RequestStatus::Running;
    running_.push_back(r);
    r->worker_knows = true;
    out.scheduled_new_reqs.push_back({r->request_id, r->prompt_token_ids, r->output_token_ids, r->sampling_params,
                                      r->seed, kv_.block_ids(*r), num_hit,
                                      r->awaits_split() ? r->child_seeds : std::vector<uint64_t>{}, r->pooling_params});
    scheduled_new.push_back({r, n, 0});
    budget -= n;
  }

  // New requests first in the token list, as in scheduled_new_reqs then scheduled_cached_reqs.
  all_decode = all_decode && scheduled_new.empty() && !scheduled_running.empty();
  bool uniform = all_decode;
  scheduled_new.insert(scheduled_new.end(), scheduled_running.begin(), scheduled_running.end());
  for (auto& [r, n, drafts] : scheduled_new) {
    prefill_tokens_computed_ +=
        std::max(0, std::min(r->num_computed_tokens + n, r->num_prompt_tokens()) - r->num_computed_tokens);
    // Its tokens reach the end: the worker samples, appended here only when this step's output arrives.
    if (r->num_computed_tokens + n - drafts ==
        r->num_tokens() + r->num_output_placeholders + r->num_draft_placeholders) {
      ++r->num_output_placeholders;
      r->num_draft_placeholders += drafts;
    }
    r->num_computed_tokens += n;  // as if every draft is accepted; update_from_output takes back the rejected
    out.num_scheduled_tokens.emplace_back(r->request_id, n);
    out.total_num_scheduled_tokens += n;
    if (drafts > 0) out.scheduled_spec_decode_tokens.emplace_back(r->request_id, drafts);
    uniform = uniform && drafts == config_.num_speculative_tokens;
  }
  num_decode_steps_ += all_decode;
  num_uniform_decode_steps_ += uniform;
  if (out.has_work()) {
    out.step_id = uint64_t(++num_steps_);
    planned_steps_.push_back({out.step_id, scheduled_new});
  }
  peak_used_blocks_ = std::max(peak_used_blocks_, kv_.block_pool().num_used());
  return out;
}

bool Scheduler::certain_to_finish(const Request& r) const {
  const int in_flight = r.num_output_placeholders;
  // A hand-off to a decode instance ends with its first token(s), a pooling request with its prompt.
  return in_flight > 0 && (r.kv_transfer == KvTransfer::ToDecode || r.is_pooling() ||
                           r.num_output_tokens() + in_flight >= r.sampling_params.max_tokens ||
                           r.num_tokens() + in_flight >= config_.max_model_len);
}

RequestStatus Scheduler::check_stop(const Request& r) const {
  const SamplingParams& p = r.sampling_params;
  if (r.num_output_tokens() >= p.min_tokens) {
    const int last = r.output_token_ids.back();
    const auto& eos = config_.eos_token_ids;
    if (!p.ignore_eos && std::find(eos.begin(), eos.end(), last) != eos.end()) return RequestStatus::FinishedStopped;
    if (std::find(p.stop_token_ids.begin(), p.stop_token_ids.end(), last) != p.stop_token_ids.end())
      return RequestStatus::FinishedStopped;
  }
  if (r.num_output_tokens() >= p.max_tokens || r.num_tokens() >= config_.max_model_len)
    return RequestStatus::FinishedLength;
  return RequestStatus::Running;
}

EngineCoreOutput Scheduler::after_pooling(Request& r, const std::vector<float>& pooled) {
  EngineCoreOutput o;
  o.req_id = r.request_id;
  o.num_cached_tokens = std::max(0, r.num_cached_tokens);
  o.pooled = pooled;
  o.finish_reason = FinishReason::Stop;
  r.status = RequestStatus::FinishedStopped;
  ++num_pooled_, num_pooled_tokens_ += r.num_prompt_tokens();
  free_request(r);  // r is gone after this
  return o;
}

// Appends a request's new tokens, stops it if one of them ends it, and says what happened.
EngineCoreOutput Scheduler::after_tokens(Request& r, std::span<const int> tokens, std::vector<TokenLogprobs> logprobs) {
  EngineCoreOutput o;
  o.req_id = r.request_id;
  o.num_cached_tokens = std::max(0, r.num_cached_tokens);
  o.new_logprobs = std::move(logprobs);
  if (r.output_token_ids.empty()) o.prompt_logprobs = std::move(r.prompt_logprobs);  // they go with the first token
  RequestStatus status = RequestStatus::Running;
  for (int token : tokens) {
    r.append_output_token(token);
    o.new_token_ids.push_back(token);
    status = check_stop(r);
    if (status != RequestStatus::Running) break;
  }
  if (o.new_logprobs.size() > o.new_token_ids.size()) o.new_logprobs.resize(o.new_token_ids.size());
  if (status != RequestStatus::Running) {
    r.status = status;
    o.finish_reason = finish_reason_of(status);
    if (status == RequestStatus::FinishedStopped) o.stop_token = r.output_token_ids.back();
    free_request(r);  // r is gone after this
  }
  return o;
}

void Scheduler::split(Request& parent, std::span<const int> first_tokens, const std::vector<TokenLogprobs>& logprobs,
                      std::vector<EngineCoreOutput>& outputs) {
  const size_t n = parent.child_req_ids.size();  // first_tokens has one per child (checked by the callers)
  const std::vector<std::string> ids = std::move(parent.child_req_ids);
  const std::vector<uint64_t> seeds = std::move(parent.child_seeds);
  parent.child_req_ids.clear(), parent.child_seeds.clear();
  count_live(parent, -1);
  parent.parent_req_id = parent.request_id;
  count_live(parent, 1);
  parent.sampling_params.n = 1;
  ++num_splits_;
  auto lp = [&](size_t i) {
    return i < logprobs.size() ? std::vector<TokenLogprobs>{logprobs[i]} : std::vector<TokenLogprobs>{};
  };
  for (size_t i = 1; i < n; ++i) {
    auto owned = std::make_unique<Request>(ids[i], parent.prompt_token_ids, parent.sampling_params, seeds[i],
                                           parent.arrival_time);
    Request& c = *owned;
    requests_.emplace(c.request_id, std::move(owned));
    c.parent_req_id = parent.request_id;
    count_live(c, 1);
    c.block_hashes.assign(
        parent.block_hashes.begin(),
        parent.block_hashes.begin() +
            std::min<long>(long(parent.block_hashes.size()), parent.num_prompt_tokens() / config_.block_size));
    c.num_cached_tokens = parent.num_cached_tokens;
    c.prompt_logprobs = parent.prompt_logprobs;  // every choice carries the prompt's
    std::optional<std::vector<std::pair<int, int>>> copies = kv_.fork(parent, c);
    if (copies) {
      c.num_computed_tokens = parent.num_prompt_tokens();
      c.status = RequestStatus::Running;
      running_.push_back(&c);
    } else {  // no block for its copy of the partial block: it waits and recomputes (prefix hits for the rest)
      c.status = RequestStatus::Waiting;
      waiting_.push_front(&c);
    }
    outputs.push_back(after_tokens(c, first_tokens.subspan(i, 1), lp(i)));
    // A child that finished on its first token gave its blocks back: nothing to copy into.
    if (copies && requests_.count(ids[i]))
      pending_block_copies_.insert(pending_block_copies_.end(), copies->begin(), copies->end());
  }
  outputs.push_back(after_tokens(parent, first_tokens.subspan(0, 1), lp(0)));
}

Scheduler::PlannedStep Scheduler::take_planned_step(const SchedulerOutput& so) {
  // Steps planned before this one that never came back (a failed step) are dropped.
  while (!planned_steps_.empty() && planned_steps_.front().step_id < so.step_id) planned_steps_.pop_front();
  if (planned_steps_.empty() || planned_steps_.front().step_id != so.step_id ||
      planned_steps_.front().scheduled.size() != so.num_scheduled_tokens.size())
    throw std::logic_error("step " + std::to_string(so.step_id) + " was not planned by this scheduler");
  PlannedStep step = std::move(planned_steps_.front());
  planned_steps_.pop_front();
  return step;
}

void Scheduler::fold_entry(Request& r, const Scheduled& scheduled, size_t i, const ModelRunnerOutput& mro,
                           std::vector<EngineCoreOutput>& outputs) {
  static const std::vector<TokenLogprobs> kNoLogprobs;
  const std::span<const int> sampled = mro.sampled(i);
  if (r.is_pooling()) {
    if (r.num_output_placeholders != 1 || !sampled.empty() || i >= mro.pooled.size() || mro.pooled[i].empty())
      throw std::logic_error("the worker returned no vector for pooling request " + r.request_id);
    --r.num_output_placeholders;
    outputs.push_back(after_pooling(r, mro.pooled[i]));
    return;
  }
  const bool splits = r.awaits_split();  // a first token per child, to split or to hand off
  if (r.num_output_placeholders < 1 || (splits && sampled.size() != r.child_req_ids.size()))
    throw std::logic_error("the worker sampled " + std::to_string(sampled.size()) + " token(s) for request " +
                           r.request_id + ", which expects " +
                           (r.num_output_placeholders < 1 ? "none" : std::to_string(r.child_req_ids.size())));
  --r.num_output_placeholders;
  if (i < mro.num_drafts_ready.size()) r.num_drafts_ready = mro.num_drafts_ready[i];
  if (scheduled.num_drafts > 0)
    account_verification(r, scheduled.num_drafts, int(sampled.size()) - 1,
                         i < mro.num_proposed_drafts.size() ? mro.num_proposed_drafts[i] : 0);
  const auto& logprobs = i < mro.logprobs.size() ? mro.logprobs[i] : kNoLogprobs;
  if (r.kv_transfer == KvTransfer::ToDecode)
    outputs.push_back(hand_off(r, sampled, logprobs));
  else if (splits)
    split(r, sampled, logprobs, outputs);
  else
    outputs.push_back(after_tokens(r, sampled, logprobs));
}

std::vector<EngineCoreOutput> Scheduler::update_from_output(const SchedulerOutput& so, const ModelRunnerOutput& mro) {
  PhaseTimer timer(profile_, StepPhase::Update);
  if (mro.step_id != so.step_id)
    throw std::logic_error("output of step " + std::to_string(mro.step_id) + " folded back as step " +
                           std::to_string(so.step_id));
  if (mro.num_entries() != so.num_scheduled_tokens.size())
    throw std::logic_error("the worker returned " + std::to_string(mro.num_entries()) + " results for step " +
                           std::to_string(so.step_id) + ", which scheduled " +
                           std::to_string(so.num_scheduled_tokens.size()) + " requests");
  const PlannedStep step = take_planned_step(so);
  std::vector<EngineCoreOutput> outputs;
  outputs.reserve(so.num_scheduled_tokens.size());
  if (so.total_num_scheduled_tokens > 0) ++(mro.ran_graph ? num_graph_replays_ : num_eager_steps_);
  for (size_t i = 0; i < step.scheduled.size(); ++i) {
    Request* r = step.scheduled[i].request;
    if (r && i < mro.prompt_logprobs.size()) take_prompt_logprobs(*r, mro.prompt_logprobs[i]);
    const bool pooled = i < mro.pooled.size() && !mro.pooled[i].empty();
    if (mro.sampled(i).empty() && !pooled) continue;  // a prefill chunk that does not reach the end yet
    if (!r) {                                         // planned before the request finished or was preempted
      const std::string& id = so.num_scheduled_tokens[i].first;
      if (auto stale = stale_outputs_.find(id); stale != stale_outputs_.end() && --stale->second == 0)
        stale_outputs_.erase(stale);
      ++num_discarded_;
      continue;
    }
    // A fault in one entry (the worker's view of this request differs from ours) ends that request with the
    // error; the rest of the step stands.
    const std::string id = r->request_id;
    try {
      fold_entry(*r, step.scheduled[i], i, mro, outputs);
    } catch (const std::exception& e) {
      ++num_step_failures_;
      if (auto it = requests_.find(id); it != requests_.end())
        fail_request(*it->second, std::string("internal error: ") + e.what(), outputs);
    }
  }
  return outputs;
}

}  // namespace parley
