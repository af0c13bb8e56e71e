// The worker's half of the KV connector (vLLM's KVConnectorBase_V1, worker side; the scheduler's half is
// kv_connector_scheduler.hpp): it starts the sends of handed-off requests' KV and the receives of arriving KV, on
// the backend the transfer names (kv_transfer_backend.hpp: bytes inline with the header, or a device link), lands
// received KV in blocks or drops it, and says which requests finished sending or receiving (get_finished). The
// worker actor forwards each message to it in one line; tests drive it directly.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/kv_transfer_backend.hpp"

namespace parley {

class KvConnectorWorker {
 public:
  // Hears once an operation finished: "" when it succeeded, else what failed.
  using Done = std::function<void(const std::string& error)>;

  explicit KvConnectorWorker(std::vector<std::unique_ptr<KvTransferBackend>> backends);
  // The link backend's transport ("nccl"), or "" when KV travels only as bytes.
  std::string link_transport() const { return links_ ? links_->name() : ""; }

  // Device links (each throws when there is no link backend).
  std::string new_link_id() { return link_backend().new_link_id(); }
  // Opens this end of link `name`; `opened` hears once the other end joined (or the link failed).
  void open_link(const std::string& name, const std::string& id, int rank, double now, Done opened);
  // Whatever is in flight on it fails.
  void close_link(const std::string& name);

  // --- Prefill side ---
  struct Started {
    std::string link;                // the link the KV goes on, "" when it rides inline with the header
    std::vector<uint8_t> inline_kv;  // that KV
  };
  // Starts sending the request's blocks on `link` ("": inline, as bytes); the blocks are free again on return. KV
  // the link cannot stage goes inline instead. Throws when the link is broken or failed to take the send.
  Started start_send(const std::string& req_id, const std::string& link, std::span<const int> blocks, double now);
  // `sent` hears when the request's send on a link finished (at once when it had already).
  void when_sent(const std::string& req_id, Done sent);

  // --- Decode side ---
  // Starts receiving the request's KV (`num_bytes` of it) on `link`, or takes `inline_kv` ("" link); `received`
  // hears once it is in. Throws when the link is broken.
  void start_recv(const std::string& req_id, const std::string& link, int64_t num_bytes, std::vector<uint8_t> inline_kv,
                  double now, Done received);
  // Writes the request's received KV into these blocks, before any later pass; or frees it unwritten.
  void land(const std::string& req_id, std::span<const int> blocks);
  void drop(const std::string& req_id);

  // vLLM's get_finished: the requests whose KV finished (or failed) sending and receiving since the last call,
  // after polling every backend (their Done callbacks hear first).
  struct Finished {
    std::vector<std::string> sending, receiving;
  };
  Finished get_finished(double now);
  bool busy() const;  // something to poll for, or finished requests get_finished has not returned yet

 private:
  struct Send {
    bool finished = false;
    std::string error;  // once finished
    Done waiter;        // once when_sent asked
  };
  KvTransferBackend& link_backend();
  KvTransferBackend& backend_for(const std::string& link) { return link.empty() ? *bytes_ : link_backend(); }
  void settle(const std::vector<KvBackendEvent>& events);
  void settle_send(const KvBackendEvent& event);
  static void tell(std::map<std::string, Done>& waiters, const std::string& key, const std::string& error);

  std::vector<std::unique_ptr<KvTransferBackend>> backends_;
  KvTransferBackend* bytes_ = nullptr;  // the first backend without links
  KvTransferBackend* links_ = nullptr;  // the first with links, if any
  std::map<std::string, Done> opening_, receiving_;
  std::map<std::string, Send> sending_;                    // sends on links, until when_sent heard how they ended
  std::map<std::string, KvTransferBackend*> received_on_;  // receives, until land() or drop()
  Finished finished_;
};

}  // namespace parley
