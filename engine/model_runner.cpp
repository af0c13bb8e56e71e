#include "engine/model_runner.hpp"

#include "engine/rejection_sampler.hpp"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace parley {

namespace {
int ceil_div(int a, int b) { return (a + b - 1) / b; }
}  // namespace

ModelRunner::ModelRunner(LlamaModel& model, int num_kv_blocks, int block_size, int max_num_seqs,
                         std::vector<int> eos_token_ids)
    // KvCache throws for a non-positive size or count
    : ModelRunner(std::make_unique<CpuDeviceModel>(model, num_kv_blocks, block_size), max_num_seqs,
                  std::move(eos_token_ids)) {}

ModelRunner::ModelRunner(std::unique_ptr<DeviceModel> device, int max_num_seqs, std::vector<int> eos_token_ids)
    : device_(std::move(device)),
      input_batch_(max_num_seqs, device_->config().max_seq_len,
                   ceil_div(device_->config().max_seq_len, device_->block_size()), std::move(eos_token_ids),
                   device_->kv_layout().num_groups()),
      // Measured (bench_structured): with every core in the pass, a mask thread slows it more than it saves.
      mask_prefetch_on_(device_->host_compute_threads() < int(std::thread::hardware_concurrency())) {}

KvCache& ModelRunner::kv_cache() {
  KvCache* kv = device_->host_kv();
  if (!kv) throw std::logic_error("ModelRunner: the KV cache on " + device_->device_name() + " is not host memory");
  return *kv;
}

void ModelRunner::check_block_id(const std::string& req_id, int block_id) const {
  if (block_id < 0 || block_id >= device_->num_blocks())
    throw std::logic_error("ModelRunner: request " + req_id + " names block " + std::to_string(block_id) + " of " +
                           std::to_string(device_->num_blocks()));
}

void ModelRunner::check_block_ids(const std::string& req_id, const GroupBlockIds& block_ids) const {
  if (!block_ids.empty() && int(block_ids.size()) != device_->kv_layout().num_groups())
    throw std::logic_error("ModelRunner: request " + req_id + " has block tables for " +
                           std::to_string(block_ids.size()) + " KV groups, the cache has " +
                           std::to_string(device_->kv_layout().num_groups()));
  for (const auto& group : block_ids)
    for (int b : group) check_block_id(req_id, b);
}

// vLLM's _update_states, except that rows not scheduled this step stay in the batch.
void ModelRunner::drop_request(const std::string& id) {
  child_seeds_.erase(id);
  drafts_.erase(id);
  pooling_.erase(id);
  if (proposer_) proposer_->remove_request(id);
}

void ModelRunner::drop_all_requests() {
  std::vector<std::string> ids;
  for (const std::string& id : input_batch_.req_ids())
    if (!id.empty()) ids.push_back(id);
  for (const auto& [id, seeds] : child_seeds_) ids.push_back(id);
  for (const auto& [id, drafts] : drafts_) ids.push_back(id);
  for (const auto& [id, pool] : pooling_) ids.push_back(id);
  for (const std::string& id : ids) input_batch_.remove_request(id), drop_request(id);
}

void ModelRunner::update_states(const SchedulerOutput& so) {
  if (so.reset_batch) drop_all_requests();  // a lost step left this side in an unknown state
  for (const std::string& id : so.finished_req_ids) input_batch_.remove_request(id), drop_request(id);
  // A preempted request loses everything here: it returns as NewRequestData with its output tokens.
  for (const std::string& id : so.preempted_req_ids)
    if (!input_batch_.remove_request(id))
      throw std::logic_error("ModelRunner: preempted request " + id + " is unknown");
  for (const std::string& id : so.preempted_req_ids) drop_request(id);
  for (const NewRequestData& r : so.scheduled_new_reqs) {
    check_block_ids(r.req_id, r.block_ids);
    input_batch_.add_request({r.req_id, r.prompt_token_ids, r.output_token_ids, r.sampling_params, r.seed, r.block_ids,
                              r.num_computed_tokens});
    if (!r.child_seeds.empty()) child_seeds_[r.req_id] = r.child_seeds;
    if (r.pooling_params)  // a resumed one starts over: its pool was dropped with it
      pooling_.insert_or_assign(
          r.req_id, PooledSequence(pooled_positions(), device_->config().dim, int(r.prompt_token_ids.size()),
                                   *r.pooling_params, device_->classifier()));
  }
  for (const CachedRequestData& r : so.scheduled_cached_reqs) {
    const auto row = input_batch_.req_index(r.req_id);
    if (!row) throw std::logic_error("ModelRunner: cached request " + r.req_id + " is unknown");
    check_block_ids(r.req_id, r.new_block_ids);
    input_batch_.append_block_ids(*row, r.new_block_ids);
    // The worker counts its own computed tokens. The scheduler's count is the same, except that while a step
    // with drafts is in flight (async scheduling) it assumes every draft stands: never fewer.
    const int own = input_batch_.num_computed_tokens(*row);
    if (proposer_ ? r.num_computed_tokens < own : r.num_computed_tokens != own)
      throw std::logic_error("ModelRunner: request " + r.req_id + " has " + std::to_string(own) +
                             " computed tokens, the scheduler says " + std::to_string(r.num_computed_tokens));
  }
  input_batch_.condense();
  if (input_batch_.batch_changed()) input_batch_.refresh_sampling_metadata();
}

// Flattens each scheduled row's tokens [num_computed, num_computed + n) in batch order.
void ModelRunner::prepare_inputs(const SchedulerOutput& so) {
  count_scheduled(so);
  reset_forward();
  sampled_.clear();
  verifications_.clear();
  prompt_rows_.clear();
  const std::unordered_map<std::string, int> drafts_of(so.scheduled_spec_decode_tokens.begin(),
                                                       so.scheduled_spec_decode_tokens.end());
  std::vector<int64_t> verify_logits;  // token indices of the verifying rows' logits, after the batch-sampled ones
  int seq = 0;
  for (int row = 0; row < input_batch_.num_reqs(); ++row) {
    if (row_steps_[size_t(row)].num_scheduled == 0) continue;
    const auto d = drafts_of.find(input_batch_.req_ids()[row]);
    add_row(row, seq++, d == drafts_of.end() ? 0 : d->second, verify_logits);
  }
  add_further_kv_groups(seq);
  ForwardBatch& f = forward_;
  for (Verification& v : verifications_) v.first_logits_row += int(f.logits_indices.size());
  f.logits_indices.insert(f.logits_indices.end(), verify_logits.begin(), verify_logits.end());
  prompt_rows_.append_logits_indices(f.logits_indices);
}

// Each row's share of the step, checked: every scheduled request known, once, and the total as the plan says.
void ModelRunner::count_scheduled(const SchedulerOutput& so) {
  const InputBatch& b = input_batch_;
  row_steps_.assign(size_t(b.num_reqs()), RowStep{});
  entry_rows_.clear();
  int total = 0;
  for (const auto& [id, n] : so.num_scheduled_tokens) {
    const auto row = b.req_index(id);
    if (!row) throw std::logic_error("ModelRunner: scheduled request " + id + " is unknown");
    entry_rows_.push_back(*row);
    if (n < 1 || row_steps_[size_t(*row)].num_scheduled != 0)
      throw std::logic_error("ModelRunner: request " + id + " scheduled twice or for no tokens");
    row_steps_[size_t(*row)].num_scheduled = n;
    total += n;
  }
  if (total != so.total_num_scheduled_tokens)
    throw std::logic_error("ModelRunner: total_num_scheduled_tokens is " +
                           std::to_string(so.total_num_scheduled_tokens) + " but the requests add up to " +
                           std::to_string(total));
}

void ModelRunner::reset_forward() {
  const InputBatch& b = input_batch_;
  ForwardBatch& f = forward_;
  for (auto* v : {&f.token_ids, &f.positions, &f.token_seq, &f.block_tables, &f.logits_indices, &f.hidden_indices})
    v->clear();
  pooled_rows_.clear();
  f.slot_mapping.clear();
  f.max_blocks_per_seq = 1;
  f.num_kv_groups = b.num_kv_groups();
  for (int row = 0; row < b.num_reqs(); ++row)
    for (int g = 0; g < f.num_kv_groups && row_steps_[size_t(row)].num_scheduled; ++g)
      f.max_blocks_per_seq = std::max(f.max_blocks_per_seq, int(b.block_ids(row, g).size()));
}

// One scheduled row as forward sequence `seq`: its tokens (drafts after the real ones), positions, group 0's block
// table and slots, and what it reads back: logits to sample or verify, pooled positions, prompt logprobs.
void ModelRunner::add_row(int row, int seq, int drafts, std::vector<int64_t>& verify_logits) {
  const InputBatch& b = input_batch_;
  ForwardBatch& f = forward_;
  const int n = row_steps_[size_t(row)].num_scheduled;
  const auto tokens = b.token_ids(row);
  const auto blocks = b.block_ids(row, 0);
  const std::string& id = b.req_ids()[row];
  row_steps_[size_t(row)].num_drafts = drafts;
  const int start = b.num_computed_tokens(row), real_end = start + n - drafts, end = start + n;
  if (drafts < 0 || drafts >= n || (drafts > 0 && (real_end != int(tokens.size()) || !proposer_)))
    throw std::logic_error("ModelRunner: request " + id + " cannot verify " + std::to_string(drafts) + " drafts here");
  if (real_end > int(tokens.size()))
    throw std::logic_error("ModelRunner: request " + id + " scheduled up to token " + std::to_string(real_end) +
                           " of " + std::to_string(tokens.size()));
  for (int g = 0; g < f.num_kv_groups; ++g)
    if (ceil_div(end, device_->block_size()) > int(b.block_ids(row, g).size()))
      throw std::logic_error("ModelRunner: request " + id + " has " + std::to_string(b.block_ids(row, g).size()) +
                             " blocks, too few for " + std::to_string(end) + " tokens");
  const auto pool = pooling_.empty() ? pooling_.end() : pooling_.find(id);
  const bool pools = pool != pooling_.end();
  const bool samples = !pools && real_end == int(tokens.size());
  if (samples && end >= b.max_model_len())
    throw std::logic_error("ModelRunner: request " + id + " is at max_model_len and cannot sample");
  f.block_tables.resize(size_t(seq + 1) * f.max_blocks_per_seq, 0);
  std::copy(blocks.begin(), blocks.end(), f.block_tables.begin() + size_t(seq) * f.max_blocks_per_seq);
  Verification v{row, real_end, 0, {}, 0, -1};
  if (drafts > 0) {  // the proposer's drafts, padded with placeholders (fed to the model as token 0)
    const auto& mine = drafts_[id];
    v.num_proposed = std::min(drafts, int(mine.size()));
    v.drafts.assign(mine.begin(), mine.begin() + v.num_proposed);
    v.drafts.resize(size_t(drafts), kPlaceholderDraft);
  }
  if (wants_prompt_logprobs(b.sampling_params(row), b.output_token_ids(row).size()))
    prompt_rows_.add(row, start, real_end, b.num_prompt_tokens(row), f.num_tokens());
  for (int p = start; p < end; ++p) {
    const int token = p < real_end ? tokens[p] : std::max(0, v.drafts[size_t(p - real_end)]);
    f.token_ids.push_back(token);
    f.positions.push_back(p);
    f.token_seq.push_back(seq);
    f.slot_mapping.push_back(int64_t(blocks[p / device_->block_size()]) * device_->block_size() +
                             p % device_->block_size());
  }
  if (pools) {  // its positions that the pooling reads, by their index in this batch
    const PooledRange range = pooled_range(pooled_positions(), start, end, b.num_prompt_tokens(row));
    pooled_rows_.push_back({row, int(f.hidden_indices.size()), range, end == int(tokens.size())});
    for (int p = range.first; p < range.last; ++p) f.hidden_indices.push_back(f.num_tokens() - (end - p));
  }
  if (samples && drafts > 0) {
    v.first_logits_row = int(verify_logits.size());
    for (int j = 0; j <= drafts; ++j) verify_logits.push_back(f.num_tokens() - 1 - drafts + j);
    verifications_.push_back(std::move(v));
  } else if (samples) {
    f.logits_indices.push_back(f.num_tokens() - 1);
    sampled_.push_back({row, real_end});
  }
}

// Every further KV group's tables [seq] and slots [token] after group 0's, in the same row order.
void ModelRunner::add_further_kv_groups(int num_seqs) {
  const InputBatch& b = input_batch_;
  ForwardBatch& f = forward_;
  const int bs = device_->block_size();
  for (int g = 1; g < f.num_kv_groups; ++g)
    for (int row = 0, s = 0; row < b.num_reqs(); ++row) {
      const int n = row_steps_[size_t(row)].num_scheduled;
      if (n == 0) continue;
      const auto gb = b.block_ids(row, g);
      f.block_tables.resize(size_t(g * num_seqs + s + 1) * f.max_blocks_per_seq, 0);
      std::copy(gb.begin(), gb.end(), f.block_tables.begin() + size_t(g * num_seqs + s) * f.max_blocks_per_seq);
      for (int p = b.num_computed_tokens(row), end = p + n; p < end; ++p)
        f.slot_mapping.push_back(int64_t(gb[size_t(p / bs)]) * bs + p % bs);
      ++s;
    }
}

int ModelRunner::verify(int row, int entry) {
  const Verification& v = verifications_[size_t(entry)];
  const int vocab = device_->config().vocab_size;
  const SamplingMetadata& m = input_batch_.sampling_metadata();
  const int batch_row[1] = {row};
  // Rejection sampling keeps the distribution, not the draws; for a greedy row both modes are the same.
  const bool rejection = verify_mode_ == SpecVerify::Rejection && m.temperature[row] >= 1e-5f;
  int accepted = 0;
  for (size_t j = 0; j <= v.drafts.size(); ++j) {
    // The request's own sampling at this position, with every accepted draft already in its history.
    const int64_t position = v.position + int64_t(j);
    const float* raw = logits_.data() + size_t(v.first_logits_row + int(j)) * vocab;
    const bool last = j == v.drafts.size();
    int token = 0;
    if (v.device_tokens_at >= 0) {  // drawn on the device (plan_device_sampling)
      token = device_sampling_.tokens.at(size_t(v.device_tokens_at) + j);
    } else if (rejection) {
      const std::vector<float> p = sampler_.target_probs(raw, vocab, row, m);
      token = last ? rejection_bonus(p, m.seeds[row], position)
                   : verify_rejection_at(v.drafts[j], p, {}, m.seeds[row], position).token;
      if (m.num_logprobs[row] >= 0)
        results_[size_t(row)].logprobs.push_back(compute_token_logprobs(raw, vocab, token, m.num_logprobs[row]));
    } else {
      const int64_t positions[1] = {position};
      SamplerOutput s = sampler_.sample(raw, vocab, batch_row, positions, m);
      token = s.sampled_token_ids[0];
      if (s.logprobs[0]) results_[size_t(row)].logprobs.push_back(std::move(*s.logprobs[0]));
    }
    results_[size_t(row)].tokens.push_back(token);
    input_batch_.append_token(row, token);
    if (last || v.drafts[j] != token) break;
    ++accepted;
  }
  results_[size_t(row)].num_proposed_drafts = v.num_proposed;
  return accepted;
}

ModelRunnerOutput ModelRunner::execute_model(const SchedulerOutput& so) {
  std::optional<PhaseTimer> phase(std::in_place, profile_, StepPhase::Prepare);
  update_states(so);
  ModelRunnerOutput out;
  out.step_id = so.step_id;
  for (const auto& [src, dst] : so.block_copies) {  // before the pass writes the children's next tokens
    for (int b : {src, dst}) check_block_id("block copy", b);
    device_->copy_block(src, dst);
    if (proposer_) proposer_->copy_block(src, dst);
  }
  if (so.num_scheduled_tokens.empty() && so.total_num_scheduled_tokens == 0) return out;
  prepare_inputs(so);
  clear_results();
  plan_device_sampling();
  if (mask_prefetch_on_) start_mask_prefetch();
  phase.emplace(profile_, StepPhase::Forward);
  out.ran_graph = device_->forward(forward_, logits_, &device_sampling_);
  phase.emplace(profile_, StepPhase::Sample);
  mask_prefetch_.wait();
  if (!pooled_rows_.empty()) pool_rows();               // before anything else runs the model
  if (proposer_ && proposer_->needs_hidden_states()) {  // before anything else runs the model
    const auto hidden = device_->hidden_states();
    const size_t dim = size_t(device_->config().dim);
    size_t first_token = 0;
    for (int row = 0; row < input_batch_.num_reqs(); ++row)
      if (const int n = row_steps_[size_t(row)].num_scheduled) {
        proposer_->observe_hidden(input_batch_.req_ids()[row], input_batch_.num_computed_tokens(row),
                                  hidden.subspan(first_token * dim, size_t(n) * dim));
        first_token += size_t(n);
      }
  }
  const SamplerOutput sampled = sample_on_host();
  prompt_rows_.score(logits_, device_->config().vocab_size, input_batch_, prompt_logprobs_);
  // KV now stands for the real tokens scheduled; a verifying row adds its accepted drafts below.
  for (int row = 0; row < input_batch_.num_reqs(); ++row)
    if (const RowStep& r = row_steps_[size_t(row)]; r.num_scheduled)
      input_batch_.set_num_computed_tokens(row, input_batch_.num_computed_tokens(row) + r.num_scheduled - r.num_drafts);
  const int vocab = device_->config().vocab_size;
  for (size_t i = 0; i < sampled_.size(); ++i) {
    const int row = sampled_[i].row;
    RowResult& result = results_[size_t(row)];
    auto split = child_seeds_.empty() ? child_seeds_.end() : child_seeds_.find(input_batch_.req_ids()[row]);
    if (split != child_seeds_.end()) {
      // The delayed split: n first tokens from this one prefill's logits, child i with its own generator.
      const float* raw = logits_.data() + i * size_t(vocab);
      const SamplingMetadata& m = input_batch_.sampling_metadata();
      result.tokens = sampler_.sample_children(raw, vocab, row, sampled_[i].position, m, split->second);
      if (m.num_logprobs[row] >= 0)
        for (int t : result.tokens)
          result.logprobs.push_back(compute_token_logprobs(raw, vocab, t, m.num_logprobs[row]));
      child_seeds_.erase(split);
    } else {
      result.tokens.push_back(sampled.sampled_token_ids[i]);
      if (sampled.logprobs[i]) result.logprobs.push_back(std::move(*sampled.logprobs[i]));
    }
    input_batch_.append_token(row, result.tokens[0]);  // the scheduler will not resend it (child 0's)
  }
  for (size_t e = 0; e < verifications_.size(); ++e) {
    const Verification& v = verifications_[e];
    const int accepted = verify(v.row, int(e));  // rejected positions are computed again later
    input_batch_.set_num_computed_tokens(v.row, input_batch_.num_computed_tokens(v.row) + accepted);
  }
  if (proposer_) {  // drafts for every request that sampled, verified in its next step
    std::vector<int> rows;
    for (const SampledRow& s : sampled_) rows.push_back(s.row);
    for (const Verification& v : verifications_) rows.push_back(v.row);
    std::vector<DraftInput> inputs;
    for (int row : rows)
      inputs.push_back({input_batch_.req_ids()[row], input_batch_.token_ids(row), input_batch_.block_ids(row)});
    std::vector<std::vector<int>> drafts = proposer_->propose(inputs);
    for (size_t i = 0; i < rows.size(); ++i) {
      results_[size_t(rows[i])].num_drafts_ready = int(drafts[i].size());
      drafts_[input_batch_.req_ids()[rows[i]]] = std::move(drafts[i]);
    }
  }
  gather_results(out);
  return out;
}

void ModelRunner::pool_rows() {
  const auto hidden = device_->normed_hidden_states();
  const size_t dim = size_t(device_->config().dim);
  if (hidden.size() != forward_.hidden_indices.size() * dim)
    throw std::logic_error("ModelRunner: the model on " + device_->device_name() + " gave no final hidden states");
  for (const PooledRow& p : pooled_rows_) {
    PooledSequence& pool = pooling_.at(input_batch_.req_ids()[p.row]);
    if (p.range.size() > 0)
      pool.add(p.range.first, hidden.subspan(size_t(p.first_hidden) * dim, size_t(p.range.size()) * dim));
    if (p.ends) results_[size_t(p.row)].pooled = pool.finish();
  }
}

void ModelRunner::clear_results() {
  results_.resize(size_t(input_batch_.num_reqs()));
  prompt_logprobs_.resize(results_.size());
  for (int row : entry_rows_) {  // only scheduled rows are written; their buffers keep their capacity
    RowResult& r = results_[size_t(row)];
    r.tokens.clear(), r.logprobs.clear(), r.num_proposed_drafts = 0, r.num_drafts_ready = 0, r.pooled.clear();
    prompt_logprobs_[size_t(row)] = {};
  }
}

// The rows' results in the order the scheduler listed its entries; the per-entry extras only when some has one.
void ModelRunner::gather_results(ModelRunnerOutput& out) {
  const size_t n = entry_rows_.size();
  out.token_offsets.reserve(n + 1);
  bool any_logprobs = false, any_prompt_logprobs = false, any_pooled = false;
  for (int row : entry_rows_) {
    const RowResult& r = results_[size_t(row)];
    out.add_entry(r.tokens);
    any_logprobs |= !r.logprobs.empty();
    any_prompt_logprobs |= !prompt_logprobs_[size_t(row)].entries.empty();
    any_pooled |= !r.pooled.empty();
  }
  if (any_pooled) out.pooled.resize(n);
  if (any_logprobs) out.logprobs.resize(n);
  if (any_prompt_logprobs) out.prompt_logprobs.resize(n);
  if (proposer_) out.num_proposed_drafts.resize(n), out.num_drafts_ready.resize(n);
  for (size_t i = 0; i < n; ++i) {
    RowResult& r = results_[size_t(entry_rows_[i])];
    if (any_logprobs) out.logprobs[i] = std::move(r.logprobs);
    if (any_prompt_logprobs) out.prompt_logprobs[i] = std::move(prompt_logprobs_[size_t(entry_rows_[i])]);
    if (any_pooled) out.pooled[i] = std::move(r.pooled);
    if (proposer_) out.num_proposed_drafts[i] = r.num_proposed_drafts, out.num_drafts_ready[i] = r.num_drafts_ready;
  }
}

// Plain rows (Sampler::plain_row, not a splitting parent) are sampled by a device that can: their logits
// stay there. A plain verifying row (exact verification, or greedy) gets every position sampled there: with
// no penalties or min_tokens, accepted drafts change nothing its draws see. Whether a row qualifies depends
// on its own request alone, so outputs stay batch-invariant.
void ModelRunner::plan_device_sampling() {
  DeviceSampling& d = device_sampling_;
  d.logits_rows.clear(), d.params.clear(), d.tokens.clear();
  if (!device_->samples_on_device()) return;
  const SamplingMetadata& m = input_batch_.sampling_metadata();
  for (size_t i = 0; i < sampled_.size(); ++i) {
    SampledRow& s = sampled_[i];
    if (child_seeds_.count(input_batch_.req_ids()[s.row]) || !Sampler::plain_row(s.row, m)) continue;
    d.logits_rows.push_back(int(i));
    d.params.push_back({m.temperature[s.row], m.min_p[s.row], m.seeds[s.row], s.position});
    s.on_device = true;
  }
  for (Verification& v : verifications_) {
    const bool rejection = verify_mode_ == SpecVerify::Rejection && m.temperature[v.row] >= 1e-5f;
    if (rejection || !Sampler::plain_row(v.row, m)) continue;
    v.device_tokens_at = int(d.logits_rows.size());
    for (size_t j = 0; j <= v.drafts.size(); ++j) {
      d.logits_rows.push_back(v.first_logits_row + int(j));
      d.params.push_back({m.temperature[v.row], m.min_p[v.row], m.seeds[v.row], v.position + int64_t(j)});
    }
  }
}

// The first mask of every constrained row, walked on another thread while the forward pass runs.
void ModelRunner::start_mask_prefetch() {
  mask_rows_.clear();
  for (const SampledRow& s : sampled_) mask_rows_.push_back(s.row);
  for (const Verification& v : verifications_) mask_rows_.push_back(v.row);
  mask_prefetch_.start(mask_rows_, input_batch_.sampling_metadata());
}

// The batch-sampled rows' tokens: the device's where it sampled, the Sampler's for the rest.
SamplerOutput ModelRunner::sample_on_host() {
  SamplerOutput out;
  out.sampled_token_ids.resize(sampled_.size());
  out.logprobs.resize(sampled_.size());
  const int vocab = device_->config().vocab_size;
  size_t next_device = 0;
  for (size_t i = 0; i < sampled_.size(); ++i) {
    const SampledRow& s = sampled_[i];
    if (s.on_device) {
      out.sampled_token_ids[i] = device_sampling_.tokens.at(next_device++);
      continue;
    }
    SamplerOutput one = sampler_.sample(logits_.data() + i * size_t(vocab), vocab, {&s.row, 1}, {&s.position, 1},
                                        input_batch_.sampling_metadata());
    out.sampled_token_ids[i] = one.sampled_token_ids[0];
    out.logprobs[i] = std::move(one.logprobs[0]);
  }
  return out;
}

}  // namespace parley
