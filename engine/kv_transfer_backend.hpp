// One way KV moves between a prefill worker and a decode worker, keyed by request id: KV as bytes that ride with
// the request's header over TCP (kv_bytes_backend.hpp), or GPU to GPU on device links (kv_link_backend.hpp).
// KvConnectorWorker (kv_connector_worker.hpp) holds them; a new transport is one more class and one line in
// make_kv_transfer_backends.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace parley {

class DeviceModel;
class KvLinkFactory;

// The KV could not be staged for a send (device memory): nothing was posted and the link is still usable.
struct KvStagingError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct KvBackendEvent {
  enum class Kind { LinkUp, LinkFailed, Sent, SendFailed, Received, ReceiveFailed };
  Kind kind;
  std::string key;  // the link's name (LinkUp, LinkFailed), else the request id
  std::string why;  // the failures': what broke
};

class KvTransferBackend {
 public:
  virtual ~KvTransferBackend() = default;
  virtual std::string name() const = 0;  // "tcp", "nccl"
  // Whether KV on it travels on named links (opened by both workers) rather than inline with the header.
  virtual bool has_links() const { return false; }
  // Links: a fresh id for the other end; this end of link `name` (LinkUp or LinkFailed follows); giving one up.
  virtual std::string new_link_id() { throw std::logic_error(name() + " has no links"); }
  virtual void open_link(const std::string& name, const std::string& id, int rank, double now);
  virtual void close_link(const std::string&) {}
  // Starts sending the request's blocks (on `link`, for a link backend): the blocks are free again on return.
  // Returns the KV that rides with the header (none when it travels on the link). Throws KvStagingError when
  // nothing was posted (send it another way), another exception when the link broke.
  virtual std::vector<uint8_t> start_send(const std::string& req_id, const std::string& link,
                                          std::span<const int> blocks, double now) = 0;
  // Starts receiving the request's `num_bytes` of KV: `inline_kv` is what rode with the header.
  virtual void start_recv(const std::string& req_id, const std::string& link, int64_t num_bytes,
                          std::vector<uint8_t> inline_kv, double now) = 0;
  // Writes a received KV into these blocks (before any later pass) and frees it; or frees it unwritten.
  virtual void land(const std::string& req_id, std::span<const int> blocks) = 0;
  virtual void drop(const std::string& req_id) = 0;
  // What finished or failed since the last call.
  virtual std::vector<KvBackendEvent> poll(double now) = 0;
  virtual bool busy() const = 0;  // something to poll for
};

// The backends of a worker: bytes over TCP always, device links when `links` is given.
std::vector<std::unique_ptr<KvTransferBackend>> make_kv_transfer_backends(DeviceModel& device,
                                                                          std::shared_ptr<KvLinkFactory> links,
                                                                          double timeout_s);

}  // namespace parley
