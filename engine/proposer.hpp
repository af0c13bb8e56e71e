// Draft proposers for speculative decoding (vLLM v1's spec_decode proposers), behind one interface the
// worker calls after each token it samples; the drafts are verified in the request's next step.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/speculative_config.hpp"

namespace parley {

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Up to k() drafts to follow the request's tokens so far (prompt then output); fewer or none is fine.
  virtual std::vector<int> propose(const std::string& req_id, std::span<const int> context) = 0;
  // The request left the worker (finished, aborted, preempted): drop whatever the proposer keeps for it.
  virtual void remove_request(const std::string& req_id) { (void)req_id; }
  virtual int k() const = 0;
};

// The proposer a --speculative-config names. Throws std::invalid_argument for a method this build cannot
// run yet, naming it.
std::unique_ptr<Proposer> make_proposer(const SpeculativeConfig& config, int max_model_len);

}  // namespace parley
