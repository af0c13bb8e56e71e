// The worker's persistent input batch (vLLM v1's gpu_input_batch.py): one preallocated row per request
// with its tokens, block table and sampling parameters. Rows are added into holes, removed (leaving a
// hole) and condensed in place, so req_ids() is exactly as long as the batch after condense(). The
// sampling metadata is rebuilt only when the batch changed, never every step.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/kv_cache_utils.hpp"
#include "engine/sampling_metadata.hpp"
#include "engine/sampling_params.hpp"

namespace parley {
namespace structured {
class StructuredOutputManager;
class StructuredOutputGrammar;
}  // namespace structured

// One request as the worker holds it (vLLM v1's CachedRequestState).
struct CachedRequestState {
  std::string req_id;
  std::vector<int> prompt_token_ids;
  std::vector<int> output_token_ids;
  SamplingParams sampling_params;
  uint64_t seed = 0;
  GroupBlockIds block_ids;  // per KV group
  int num_computed_tokens = 0;

  int num_tokens() const { return int(prompt_token_ids.size() + output_token_ids.size()); }
};

class InputBatch {
 public:
  // eos_token_ids are masked with the stop_token_ids while a request is under min_tokens (unless ignore_eos).
  // Each of num_kv_groups KV groups has its own block table.
  InputBatch(int max_num_reqs, int max_model_len, int max_num_blocks_per_req, std::vector<int> eos_token_ids = {},
             int num_kv_groups = 1);
  // The metadata points into this object's rows.
  InputBatch(const InputBatch&) = delete;
  InputBatch& operator=(const InputBatch&) = delete;
  ~InputBatch();

  // Where requests with structured_outputs get their grammar matcher; without one they are refused.
  void set_structured_output_manager(std::shared_ptr<structured::StructuredOutputManager> manager) {
    structured_outputs_ = std::move(manager);
  }

  // Puts the request into the lowest empty row (a hole, else the end) and returns that row. Throws
  // std::logic_error for an empty or duplicate id, a full batch, or more tokens or blocks than a row holds,
  // or a structured output without a manager (structured::GrammarError for one that does not compile).
  int add_request(const CachedRequestState& request);
  // Empties the request's row, leaving a hole until condense(); returns the row, or nullopt for an unknown id.
  std::optional<int> remove_request(const std::string& req_id);
  // Moves the last rows into the holes, lowest hole first, and trims req_ids() to num_reqs().
  void condense();

  int num_reqs() const { return int(req_id_to_index_.size()); }
  // The request of each row; "" marks a hole (only between a remove_request and condense()).
  const std::vector<std::string>& req_ids() const { return req_ids_; }
  std::optional<int> req_index(const std::string& req_id) const;

  std::span<const int> token_ids(int row) const;  // prompt then output
  std::span<const int> output_token_ids(int row) const;
  int num_tokens(int row) const { return num_tokens_[row]; }
  int num_prompt_tokens(int row) const { return num_prompt_tokens_[row]; }
  int num_computed_tokens(int row) const { return num_computed_tokens_[row]; }
  std::span<const int> block_ids(int row, int group = 0) const;
  int num_kv_groups() const { return int(block_tables_.size()); }
  const SamplingParams& sampling_params(int row) const { return params_[row]; }
  uint64_t seed(int row) const { return seeds_[row]; }
  CachedRequestState request_state(int row) const;  // a copy of everything the row holds

  // Per-step updates: none of them changes the batch, so the metadata stays valid.
  void append_block_ids(int row, const GroupBlockIds& block_ids);  // one list per KV group (or none: nothing new)
  void set_num_computed_tokens(int row, int num_computed_tokens);
  void append_token(int row, int token);  // a sampled token, seen by penalties from the next step on

  // Derived from the requests' sampling parameters (vLLM keeps a request-id set per flag).
  bool all_greedy() const {
    return !any_request([](const SamplingParams& p) { return !p.greedy(); });
  }
  bool all_random() const {
    return !any_request([](const SamplingParams& p) { return p.greedy(); });
  }
  bool no_top_k() const { return !any_request_uses(&SamplingParams::top_k); }
  bool no_top_p() const { return !any_request_uses(&SamplingParams::top_p); }
  bool no_min_p() const { return !any_request_uses(&SamplingParams::min_p); }
  bool no_penalties() const {
    return !any_request([](const SamplingParams& p) { return p.has_penalties(); });
  }
  int max_num_logprobs() const;  // -1 when no request wants logprobs

  // True after add/remove/condense until the next refresh_sampling_metadata().
  bool batch_changed() const { return batch_changed_; }
  void refresh_sampling_metadata();
  // Throws std::logic_error if the batch changed since the last refresh (the metadata would be stale).
  const SamplingMetadata& sampling_metadata() const;
  int64_t num_metadata_rebuilds() const { return num_metadata_rebuilds_; }

  int max_num_reqs() const { return max_num_reqs_; }
  int max_model_len() const { return max_model_len_; }
  int max_num_blocks_per_req() const { return max_blocks_; }

 private:
  void move_row(int from, int to);
  void check_row(int row) const;
  template <class Predicate>
  bool any_request(Predicate predicate) const {
    for (const auto& [req_id, row] : req_id_to_index_)
      if (predicate(params_[row])) return true;
    return false;
  }
  template <class T>
  bool any_request_uses(T SamplingParams::*member) const {
    return any_request([member](const SamplingParams& p) { return uses(p, member); });
  }

  int max_num_reqs_, max_model_len_, max_blocks_;
  std::vector<int> eos_token_ids_;
  std::vector<std::string> req_ids_;
  std::unordered_map<std::string, int> req_id_to_index_;
  std::vector<int> holes_;  // empty rows below req_ids_.size(), ascending

  // Preallocated per-row state.
  std::vector<int> token_ids_;  // [max_num_reqs][max_model_len]
  std::vector<int> num_tokens_, num_prompt_tokens_, num_computed_tokens_;
  struct BlockTable {      // one KV group's (vLLM's BlockTable)
    std::vector<int> ids;  // [max_num_reqs][max_num_blocks_per_req]
    std::vector<int> num_blocks;
  };
  std::vector<BlockTable> block_tables_;
  std::vector<SamplingParams> params_;
  std::vector<uint64_t> seeds_;
  std::vector<std::vector<int>> min_tokens_stop_ids_;
  std::shared_ptr<structured::StructuredOutputManager> structured_outputs_;
  std::vector<std::unique_ptr<structured::StructuredOutputGrammar>> grammars_;  // per row, null: unconstrained

  SamplingMetadata metadata_;
  bool batch_changed_ = true;
  int64_t num_metadata_rebuilds_ = 0;
};

}  // namespace parley
