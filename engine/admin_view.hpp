// What /admin shows, as plain values: the scheduler's requests, block pool and steps (made from the Scheduler
// in admin_view.cpp, no CAF), the KV transfer actor's peers on PD roles, and every actor's counts. The HTTP layer turns
// them into JSON in one place (http/admin_json.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parley {

class Scheduler;

struct RequestView {
  std::string id, user_request, state;
  int prompt_tokens = 0, output_tokens = 0, computed_tokens = 0, placeholders = 0;
  std::vector<int> blocks;                     // every block it references, the null block left out
  std::vector<std::vector<int>> block_tables;  // per KV group
  int n = 1;                                   // a parallel-sampling parent's children, before its split
  bool pooling = false;                        // an embedding input (prefill only, one vector out)
  int preemptions = 0;
};

struct BlockPoolView {
  int total = 0, used = 0, cached = 0, free = 0;
  std::string states;  // one character per block: 'u' referenced, 'c' free holding a cached prefix, 'f' free, 'n' null
};

struct StepsView {
  bool async_scheduling = false;
  std::vector<uint64_t> in_flight;   // step ids on the worker, oldest first
  bool worker_news_pending = false;  // finished requests the worker has not been told of yet
  int64_t total = 0, discarded_tokens = 0;
};

// A decode instance's prefill peer.
struct KvPeerView {
  std::string address;
  bool up = false;
  size_t in_flight = 0;
  bool device_link = false;
};

// The KV transfer actor's side of a PD instance.
struct KvTransferView {
  std::vector<KvPeerView> peers;  // decode role
  std::string link_transport;     // "": no device links
  size_t links_to_decode = 0, transfers_in_flight = 0, awaiting_prefill = 0, held_for_decode = 0;
};

// One engine's /admin/requests.
struct EngineView {
  std::vector<RequestView> requests;  // split children with their parent
  BlockPoolView kv_blocks;
  int64_t num_splits = 0;
  int64_t pooled_requests = 0, pooled_tokens = 0;  // pooling requests that produced their vector, their prompt tokens
  StepsView steps;
  std::optional<KvTransferView> kv_transfer;  // PD roles
};

// One actor's line in /admin/actors.
struct ActorView {
  std::string name;
  std::optional<size_t> mailbox_depth;  // none: it did not answer in time (busy)
  std::optional<uint64_t> messages_handled;
};

// The scheduler's part of the view.
EngineView admin_view(const Scheduler& scheduler, bool async_scheduling, const std::vector<uint64_t>& steps_in_flight);

}  // namespace parley
