#include "engine/input_batch.hpp"

#include "engine/request.hpp"
#include "engine/structured_output/structured_output_manager.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace parley {

InputBatch::InputBatch(int max_num_reqs, int max_model_len, int max_num_blocks_per_req, std::vector<int> eos_token_ids,
                       int num_kv_groups)
    : max_num_reqs_(max_num_reqs),
      max_model_len_(max_model_len),
      max_blocks_(max_num_blocks_per_req),
      eos_token_ids_(std::move(eos_token_ids)),
      token_ids_(size_t(max_num_reqs) * max_model_len),
      num_tokens_(max_num_reqs),
      num_prompt_tokens_(max_num_reqs),
      num_computed_tokens_(max_num_reqs),
      block_tables_(size_t(std::max(num_kv_groups, 1)),
                    BlockTable{std::vector<int>(size_t(max_num_reqs) * max_num_blocks_per_req),
                               std::vector<int>(size_t(max_num_reqs))}),
      params_(max_num_reqs),
      seeds_(max_num_reqs),
      min_tokens_stop_ids_(max_num_reqs),
      grammars_(size_t(max_num_reqs)) {
  if (max_num_reqs < 1 || max_model_len < 1 || max_num_blocks_per_req < 1 || num_kv_groups < 1)
    throw std::invalid_argument("InputBatch needs at least one row, one token, one block per row and one KV group");
  req_ids_.reserve(max_num_reqs);
  refresh_sampling_metadata();
  num_metadata_rebuilds_ = 0;
}

InputBatch::~InputBatch() = default;

int InputBatch::add_request(const CachedRequestState& r) {
  if (r.req_id.empty()) throw std::logic_error("InputBatch: empty request id");
  if (req_id_to_index_.count(r.req_id))
    throw std::logic_error("InputBatch: request " + r.req_id + " is already in the batch");
  if (holes_.empty() && int(req_ids_.size()) == max_num_reqs_)
    throw std::logic_error("InputBatch: all " + std::to_string(max_num_reqs_) + " rows are taken");
  bool too_many_blocks = r.block_ids.size() != block_tables_.size();
  for (const auto& ids : r.block_ids) too_many_blocks = too_many_blocks || int(ids.size()) > max_blocks_;
  if (r.prompt_token_ids.empty() || r.num_tokens() > max_model_len_ || too_many_blocks || r.num_computed_tokens < 0 ||
      r.num_computed_tokens > r.num_tokens())
    throw std::logic_error("InputBatch: request " + r.req_id +
                           " has no prompt, more tokens than a row holds, not one block " +
                           "list per KV group or more blocks than a row holds, or more computed tokens than tokens");
  std::unique_ptr<structured::StructuredOutputGrammar> grammar;  // made first: a failure leaves the batch as it was
  if (const auto& so = r.sampling_params.structured_outputs) {
    if (!structured_outputs_)
      throw RequestFailure(r.req_id, "this worker has no structured-output support for request " + r.req_id);
    std::vector<int> end_tokens = r.sampling_params.stop_token_ids;
    if (!r.sampling_params.ignore_eos)
      end_tokens.insert(end_tokens.end(), eos_token_ids_.begin(), eos_token_ids_.end());
    try {
      grammar = structured_outputs_->grammar_for(*so, std::move(end_tokens));
    } catch (const std::exception& e) {  // the ingress compiled it; this worker could not: the request's own failure
      throw RequestFailure(r.req_id, std::string("structured output: ") + e.what());
    }
  }
  int row;
  if (!holes_.empty()) {
    row = holes_.front();
    holes_.erase(holes_.begin());
    req_ids_[row] = r.req_id;
  } else {
    row = int(req_ids_.size());
    req_ids_.push_back(r.req_id);
  }
  req_id_to_index_[r.req_id] = row;

  int* tokens = token_ids_.data() + size_t(row) * max_model_len_;
  std::copy(r.prompt_token_ids.begin(), r.prompt_token_ids.end(), tokens);
  std::copy(r.output_token_ids.begin(), r.output_token_ids.end(), tokens + r.prompt_token_ids.size());
  num_tokens_[row] = r.num_tokens();
  num_prompt_tokens_[row] = int(r.prompt_token_ids.size());
  num_computed_tokens_[row] = r.num_computed_tokens;
  for (size_t g = 0; g < block_tables_.size(); ++g) {
    std::copy(r.block_ids[g].begin(), r.block_ids[g].end(), block_tables_[g].ids.begin() + size_t(row) * max_blocks_);
    block_tables_[g].num_blocks[size_t(row)] = int(r.block_ids[g].size());
  }
  params_[row] = r.sampling_params;
  seeds_[row] = r.seed;
  grammars_[size_t(row)] = std::move(grammar);

  const SamplingParams& p = r.sampling_params;
  std::vector<int>& stop_ids = min_tokens_stop_ids_[row];
  stop_ids.clear();
  if (p.min_tokens > 0) {
    stop_ids = p.stop_token_ids;
    if (!p.ignore_eos) stop_ids.insert(stop_ids.end(), eos_token_ids_.begin(), eos_token_ids_.end());
  }
  batch_changed_ = true;
  return row;
}

std::optional<int> InputBatch::remove_request(const std::string& req_id) {
  const auto it = req_id_to_index_.find(req_id);
  if (it == req_id_to_index_.end()) return std::nullopt;
  const int row = it->second;
  req_id_to_index_.erase(it);
  req_ids_[row].clear();
  holes_.insert(std::upper_bound(holes_.begin(), holes_.end(), row), row);
  params_[row] = SamplingParams{};  // drops its vectors now, not when the row is reused
  min_tokens_stop_ids_[row].clear();
  grammars_[size_t(row)].reset();
  num_tokens_[row] = num_prompt_tokens_[row] = num_computed_tokens_[row] = 0;
  for (auto& t : block_tables_) t.num_blocks[size_t(row)] = 0;
  batch_changed_ = true;
  return row;
}

void InputBatch::condense() {
  if (holes_.empty()) return;
  int last = int(req_ids_.size()) - 1;
  for (int hole : holes_) {
    while (last >= 0 && req_ids_[last].empty()) --last;
    if (hole >= last) break;
    move_row(last--, hole);
  }
  holes_.clear();
  req_ids_.resize(req_id_to_index_.size());
  batch_changed_ = true;
}

// Only the live part of each row moves: the rest of a row is never read.
void InputBatch::move_row(int from, int to) {
  req_ids_[to] = std::move(req_ids_[from]);
  req_ids_[from].clear();
  req_id_to_index_[req_ids_[to]] = to;
  const size_t L = size_t(max_model_len_), B = size_t(max_blocks_);
  std::copy_n(token_ids_.begin() + from * L, num_tokens_[from], token_ids_.begin() + to * L);
  for (auto& t : block_tables_) {
    std::copy_n(t.ids.begin() + from * B, t.num_blocks[size_t(from)], t.ids.begin() + to * B);
    t.num_blocks[size_t(to)] = std::exchange(t.num_blocks[size_t(from)], 0);
  }
  num_tokens_[to] = num_tokens_[from];
  num_prompt_tokens_[to] = num_prompt_tokens_[from];
  num_computed_tokens_[to] = num_computed_tokens_[from];
  seeds_[to] = seeds_[from];
  params_[to] = std::move(params_[from]);
  params_[from] = SamplingParams{};
  min_tokens_stop_ids_[to] = std::move(min_tokens_stop_ids_[from]);
  min_tokens_stop_ids_[from].clear();
  grammars_[size_t(to)] = std::move(grammars_[size_t(from)]);
  num_tokens_[from] = num_prompt_tokens_[from] = num_computed_tokens_[from] = 0;
}

std::optional<int> InputBatch::req_index(const std::string& req_id) const {
  const auto it = req_id_to_index_.find(req_id);
  if (it == req_id_to_index_.end()) return std::nullopt;
  return it->second;
}

void InputBatch::check_row(int row) const {
  if (row < 0 || row >= int(req_ids_.size()) || req_ids_[row].empty())
    throw std::logic_error("InputBatch: row " + std::to_string(row) + " holds no request");
}

std::span<const int> InputBatch::token_ids(int row) const {
  return {token_ids_.data() + size_t(row) * max_model_len_, size_t(num_tokens_[row])};
}

std::span<const int> InputBatch::output_token_ids(int row) const {
  return token_ids(row).subspan(num_prompt_tokens_[row]);
}

std::span<const int> InputBatch::block_ids(int row, int group) const {
  const BlockTable& t = block_tables_.at(size_t(group));
  return {t.ids.data() + size_t(row) * max_blocks_, size_t(t.num_blocks[size_t(row)])};
}

CachedRequestState InputBatch::request_state(int row) const {
  check_row(row);
  CachedRequestState r;
  r.req_id = req_ids_[row];
  const auto tokens = token_ids(row);
  r.prompt_token_ids.assign(tokens.begin(), tokens.begin() + num_prompt_tokens_[row]);
  r.output_token_ids.assign(tokens.begin() + num_prompt_tokens_[row], tokens.end());
  r.sampling_params = params_[row];
  r.seed = seeds_[row];
  for (int g = 0; g < num_kv_groups(); ++g) {
    const auto blocks = block_ids(row, g);
    r.block_ids.emplace_back(blocks.begin(), blocks.end());
  }
  r.num_computed_tokens = num_computed_tokens_[row];
  return r;
}

void InputBatch::append_block_ids(int row, const GroupBlockIds& block_ids) {
  check_row(row);
  if (block_ids.empty()) return;  // nothing new in any group
  if (block_ids.size() != block_tables_.size())
    throw std::logic_error("InputBatch: request " + req_ids_[row] + " got blocks for " +
                           std::to_string(block_ids.size()) + " KV groups, the batch has " +
                           std::to_string(block_tables_.size()));
  for (size_t g = 0; g < block_tables_.size(); ++g)
    if (block_tables_[g].num_blocks[size_t(row)] + int(block_ids[g].size()) > max_blocks_)
      throw std::logic_error("InputBatch: request " + req_ids_[row] + " would hold more than " +
                             std::to_string(max_blocks_) + " blocks");
  for (size_t g = 0; g < block_tables_.size(); ++g) {
    BlockTable& t = block_tables_[g];
    std::copy(block_ids[g].begin(), block_ids[g].end(),
              t.ids.begin() + size_t(row) * max_blocks_ + t.num_blocks[size_t(row)]);
    t.num_blocks[size_t(row)] += int(block_ids[g].size());
  }
}

void InputBatch::set_num_computed_tokens(int row, int num_computed_tokens) {
  check_row(row);
  if (num_computed_tokens < 0 || num_computed_tokens > num_tokens_[row])
    throw std::logic_error("InputBatch: request " + req_ids_[row] + " has " + std::to_string(num_tokens_[row]) +
                           " tokens, not " + std::to_string(num_computed_tokens) + " computed");
  num_computed_tokens_[row] = num_computed_tokens;
}

void InputBatch::append_token(int row, int token) {
  check_row(row);
  if (num_tokens_[row] == max_model_len_)
    throw std::logic_error("InputBatch: request " + req_ids_[row] + " is at max_model_len");
  token_ids_[size_t(row) * max_model_len_ + num_tokens_[row]++] = token;
}

int InputBatch::max_num_logprobs() const {
  int n = -1;
  for (const auto& [req_id, row] : req_id_to_index_) n = std::max(n, params_[row].logprobs.value_or(-1));
  return n;
}

void InputBatch::refresh_sampling_metadata() {
  SamplingMetadata& m = metadata_;
  const int rows = int(req_ids_.size());
  m.temperature.resize(rows);
  m.top_k.resize(rows);
  m.top_p.resize(rows);
  m.min_p.resize(rows);
  m.presence_penalties.resize(rows);
  m.frequency_penalties.resize(rows);
  m.repetition_penalties.resize(rows);
  m.min_tokens.resize(rows);
  m.seeds.resize(rows);
  m.num_logprobs.resize(rows);
  m.device_can_sample.resize(rows);
  m.logit_bias.resize(rows);
  m.min_tokens_stop_ids.resize(rows);
  m.grammars.resize(rows);
  for (int r = 0; r < rows; ++r) {
    const SamplingParams& p = params_[r];  // a hole holds the defaults: nothing to apply
    m.temperature[r] = p.temperature;
    m.top_k[r] = p.top_k;
    m.top_p[r] = p.top_p;
    m.min_p[r] = p.min_p;
    m.presence_penalties[r] = p.presence_penalty;
    m.frequency_penalties[r] = p.frequency_penalty;
    m.repetition_penalties[r] = p.repetition_penalty;
    m.min_tokens[r] = p.min_tokens;
    m.seeds[r] = seeds_[r];
    m.num_logprobs[r] = p.logprobs ? *p.logprobs : -1;
    m.device_can_sample[r] = device_can_sample(p);
    m.logit_bias[r] = p.logit_bias.empty() ? nullptr : &p.logit_bias;
    m.min_tokens_stop_ids[r] = min_tokens_stop_ids_[r].empty() ? nullptr : &min_tokens_stop_ids_[r];
    m.grammars[r] = grammars_[size_t(r)].get();
  }
  m.all_greedy = all_greedy();
  m.all_random = all_random();
  m.no_top_k = no_top_k();
  m.no_top_p = no_top_p();
  m.no_min_p = no_min_p();
  m.no_penalties = no_penalties();
  m.no_logit_bias = !any_request_uses(&SamplingParams::logit_bias);
  m.no_min_tokens = std::all_of(min_tokens_stop_ids_.begin(), min_tokens_stop_ids_.end(),
                                [](const std::vector<int>& stop_ids) { return stop_ids.empty(); });
  m.max_num_logprobs = max_num_logprobs();
  m.token_ids = token_ids_.data();
  m.token_stride = max_model_len_;
  m.num_tokens = num_tokens_.data();
  m.num_prompt_tokens = num_prompt_tokens_.data();
  batch_changed_ = false;
  ++num_metadata_rebuilds_;
}

const SamplingMetadata& InputBatch::sampling_metadata() const {
  if (batch_changed_)
    throw std::logic_error("InputBatch: sampling metadata is stale; call refresh_sampling_metadata()");
  return metadata_;
}

}  // namespace parley
