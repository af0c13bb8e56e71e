// A scheduler by hand for the ModelRunner tests: builds each SchedulerOutput from a few live requests,
// hands out block ids, applies the runner's sampled tokens and stops requests as the engine core would.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/model_runner.hpp"

namespace parley::test {

struct LiveRequest {
  std::string id;
  std::vector<int> prompt, output;
  SamplingParams params;
  uint64_t seed = 0;
  std::vector<int> blocks;
  std::vector<TokenLogprobs> logprobs;
  int num_computed = 0;
  bool on_worker = false;  // the runner holds it: send CachedRequestData, not NewRequestData
  bool finished = false;
  bool held = false;  // live but not scheduled (preempted, or left out of a step)
  int num_tokens() const { return int(prompt.size() + output.size()); }
};

class RunnerDriver {
 public:
  // Requests stop on stop_ids (unless ignore_eos), their stop_token_ids, max_tokens or the context.
  RunnerDriver(ModelRunner& runner, int block_size, int num_blocks, std::vector<int> stop_ids)
      : runner_(runner), block_size_(block_size), stop_ids_(std::move(stop_ids)) {
    for (int b = 0; b < num_blocks; ++b) free_blocks_.push_back(b);
  }

  int chunk = 1 << 30;   // most tokens of one request per step
  int budget = 1 << 30;  // most tokens per step

  void add(const std::string& id, std::vector<int> prompt, SamplingParams params, uint64_t seed) {
    LiveRequest r;
    r.id = id, r.prompt = std::move(prompt), r.params = std::move(params), r.seed = seed;
    order_.push_back(id);
    live_[id] = std::move(r);
  }
  // Recompute-preemption: the blocks go back (to the end of the free list) and the worker drops it.
  void preempt(const std::string& id) {
    LiveRequest& r = live_.at(id);
    release(r);
    r.num_computed = 0, r.on_worker = false, r.held = true;
    preempted_.push_back(id);
  }
  void abort(const std::string& id) {
    LiveRequest& r = live_.at(id);
    release(r);
    r.finished = true;
    finished_.push_back(id);
  }
  void hold(const std::string& id, bool held) { live_.at(id).held = held; }
  const LiveRequest& request(const std::string& id) const { return live_.at(id); }
  const std::vector<int>& output(const std::string& id) const { return live_.at(id).output; }
  int num_free_blocks() const { return int(free_blocks_.size()); }

  bool done() const {
    return std::all_of(live_.begin(), live_.end(), [](const auto& kv) { return kv.second.finished; });
  }
  void run_to_completion() {
    while (!done()) step();
    step();  // delivers the last finished ids
  }

  ModelRunnerOutput step() {
    SchedulerOutput so;
    so.step_id = step_id_++;
    so.finished_req_ids = std::exchange(finished_, {});
    so.preempted_req_ids = std::exchange(preempted_, {});
    std::map<std::string, int> scheduled;
    int left = budget;
    for (const std::string& id : order_) {
      LiveRequest& r = live_.at(id);
      const int n = std::min({r.num_tokens() - r.num_computed, chunk, left});
      if (r.finished || r.held || n <= 0) continue;
      std::vector<int> new_blocks;
      while (int(r.blocks.size() + new_blocks.size()) * block_size_ < r.num_computed + n) {
        REQUIRE(!free_blocks_.empty());
        new_blocks.push_back(free_blocks_.front());
        free_blocks_.pop_front();
      }
      r.blocks.insert(r.blocks.end(), new_blocks.begin(), new_blocks.end());
      if (!r.on_worker) {
        so.scheduled_new_reqs.push_back(
            {r.id, r.prompt, r.output, r.params, r.seed, GroupBlockIds{r.blocks}, r.num_computed, {}});
        r.on_worker = true;
      } else {
        so.scheduled_cached_reqs.push_back({r.id, GroupBlockIds{new_blocks}, r.num_computed});
      }
      so.num_scheduled_tokens.emplace_back(id, n);
      so.total_num_scheduled_tokens += n;
      scheduled[id] = n;
      left -= n;
    }
    ModelRunnerOutput out = runner_.execute_model(so);
    REQUIRE(out.step_id == so.step_id);
    REQUIRE(out.num_entries() == so.num_scheduled_tokens.size());  // entry i: the i-th request scheduled
    REQUIRE((out.logprobs.empty() || out.logprobs.size() == out.num_entries()));
    for (auto& [id, n] : scheduled) live_.at(id).num_computed += n;
    for (size_t i = 0; i < out.num_entries(); ++i) {
      LiveRequest& r = live_.at(so.num_scheduled_tokens[i].first);
      const bool reached_end = r.num_computed == r.num_tokens();
      const size_t num_logprobs = i < out.logprobs.size() ? out.logprobs[i].size() : 0;
      REQUIRE(out.sampled(i).size() == (reached_end ? 1u : 0u));
      REQUIRE(num_logprobs == size_t(reached_end && r.params.logprobs.has_value()));
      if (!reached_end) continue;
      const int token = out.sampled(i)[0];
      r.output.push_back(token);
      if (num_logprobs) r.logprobs.push_back(out.logprobs[i][0]);
      if (stops(r, token) || int(r.output.size()) >= r.params.max_tokens || r.num_tokens() >= context()) {
        release(r);
        r.finished = true;
        finished_.push_back(r.id);
      }
    }
    return out;
  }

 private:
  bool stops(const LiveRequest& r, int token) const {
    const auto& own = r.params.stop_token_ids;
    if (std::find(own.begin(), own.end(), token) != own.end()) return true;
    return !r.params.ignore_eos && std::find(stop_ids_.begin(), stop_ids_.end(), token) != stop_ids_.end();
  }
  int context() const { return runner_.config().max_seq_len; }
  void release(LiveRequest& r) {
    for (int b : r.blocks) free_blocks_.push_back(b);
    r.blocks.clear();
  }

  ModelRunner& runner_;
  int block_size_;
  std::vector<int> stop_ids_;
  std::deque<int> free_blocks_;
  std::map<std::string, LiveRequest> live_;
  std::vector<std::string> order_;
  std::vector<std::string> finished_, preempted_;
  uint64_t step_id_ = 0;
};

}  // namespace parley::test
