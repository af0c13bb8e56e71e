// A request as the scheduler sees it (vLLM v1's vllm/v1/request.py): one state enum, the tokens so far,
// and how many of them have their KV in the cache.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/kv_cache_utils.hpp"
#include "engine/pooling_params.hpp"
#include "engine/request_output.hpp"
#include "engine/sampling_params.hpp"
#include "engine/token_logprobs.hpp"

namespace parley {

enum class RequestStatus {
  Waiting,             // queued, nothing computed or everything dropped by preemption
  Running,             // holds blocks and is scheduled each step
  Preempted,           // blocks taken back; waits at the front of the queue to recompute
  WaitingForRemoteKv,  // a decode instance: holds blocks for its prompt's KV, which a prefill instance computes
  FinishedStopped,     // EOS, a stop token or a stop string
  FinishedLength,      // max_tokens or the context length
  FinishedAborted,     // cancelled by the client, a disconnect, or shutdown
};
bool is_finished(RequestStatus s);

FinishReason finish_reason_of(RequestStatus s);  // None for unfinished states

// Prefill/decode disaggregation (vLLM's kv_transfer_params): where the prompt's KV is computed.
enum class KvTransfer {
  None,      // here, and decoded here
  ToDecode,  // a prefill instance: prefill, sample the first token(s), keep the blocks until the decode side has them
  FromPrefill,  // a decode instance: blocks are allocated, the KV and the first token(s) arrive from a prefill instance
};

// A step's failure that is one request's own (its grammar does not compile in the worker, say): that request
// ends with the error and the others run on. Any other exception from a step is the engine's own.
struct RequestFailure : std::runtime_error {
  RequestFailure(std::string id, const std::string& what) : std::runtime_error(what), req_id(std::move(id)) {}
  std::string req_id;
};

struct RequestBlockTables;  // the KV cache manager's entry for a request that holds blocks

struct Request {
  // What every step reads and writes (schedule, update_from_output) comes first, in as few cache lines as it
  // fits: at a few dozen running requests a step's cost is mostly these lines arriving from memory.
  std::string request_id;
  std::vector<int> output_token_ids;
  std::vector<int> all_token_ids;  // prompt then output
  std::vector<int> prompt_token_ids;
  int num_computed_tokens = 0;      // tokens whose KV is in the cache
  int num_cached_tokens = -1;       // prefix-cache hit on first scheduling (-1: not yet scheduled)
  int num_output_placeholders = 0;  // tokens sampled by steps in flight, not appended yet (async scheduling)
  int num_draft_placeholders = 0;   // drafts verified by steps in flight: positions held until their verdict
  int num_drafts_ready = 0;         // speculative decoding: drafts the worker holds for its next step
  RequestStatus status = RequestStatus::Waiting;
  KvTransfer kv_transfer = KvTransfer::None;
  bool worker_knows = false;                // the scheduler sent it to the worker and has not dropped it since
  RequestBlockTables* kv_tables = nullptr;  // its blocks in the KV cache manager (null: none), found without its id
  std::vector<BlockHash> block_hashes;      // of every full block of all_token_ids, filled as blocks fill
  // Parallel sampling (n > 1): until its delayed split the request is the parent, prefilled once; then it
  // continues as child 0 and children 1..n-1 join. Both lists are empty for any other request.
  std::vector<std::string> child_req_ids;  // [0] is this request's own id
  // prompt_logprobs: prompt tokens 1.. scored so far, until the first output takes them.
  std::vector<TokenLogprobs> prompt_logprobs;
  SamplingParams sampling_params;
  std::optional<PoolingParams> pooling_params;  // set: a pooling request (prefill only; its output is one vector)
  uint64_t seed = 0;                            // the generator's key: params.seed, or drawn at admission
  int num_preemptions = 0;
  int num_lost_steps = 0;             // steps it was in that failed and were resynchronised (see Scheduler::resync)
  std::optional<int> stop_token;      // the token that stopped it (EOS or a stop_token_id)
  double arrival_time = 0.0;          // seconds, steady clock
  std::vector<uint64_t> child_seeds;  // [0] is this request's own seed
  std::string parent_req_id;          // set on split children (and on child 0): one user request

  Request() = default;
  Request(std::string id, std::vector<int> prompt, SamplingParams params, uint64_t seed, double arrival = 0.0);

  int num_prompt_tokens() const { return int(prompt_token_ids.size()); }
  int num_output_tokens() const { return int(output_token_ids.size()); }
  int num_tokens() const { return int(all_token_ids.size()); }
  void append_output_token(int token);
  bool is_pooling() const { return pooling_params.has_value(); }
  bool awaits_split() const { return child_req_ids.size() > 1; }
  // The request the user sent: the parent's id for split children.
  const std::string& user_request_id() const { return parent_req_id.empty() ? request_id : parent_req_id; }
};

}  // namespace parley
