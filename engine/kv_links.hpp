// A worker's device links (model/kv_link.hpp) and the KV transfers in flight on them.
// A send stages its blocks first, so they are free again as soon as send() returns. A receive lands in
// staging and reaches blocks only through land(), which the scheduler asks for once it knows the request
// still wants them: an aborted request's blocks are never written late. Every opening link and every
// transfer has a deadline; one that passes breaks its link and fails everything on it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kv_transfer_backend.hpp"
#include "model/device_model.hpp"
#include "model/kv_link.hpp"

namespace parley {

struct KvLinkEvent {
  enum class Kind { Up, Done, Failed };
  Kind kind;
  uint64_t tag;     // the open's, send's or receive's
  std::string why;  // Failed: what broke
};

class KvLinks {
 public:
  KvLinks(DeviceModel& device, std::shared_ptr<KvLinkFactory> factory, double timeout_s);
  ~KvLinks();  // aborts every link first: no transfer touches its staging once that is freed
  KvLinks(const KvLinks&) = delete;
  KvLinks& operator=(const KvLinks&) = delete;
  std::string new_id() { return factory_->new_id(); }
  // Opens this end of link `id` under `key`; Up (or Failed) for `tag` follows. A link already under `key` is aborted.
  void open(const std::string& key, const std::string& id, int rank, uint64_t tag, double now);
  // Posts the blocks' KV to the peer. Throws KvStagingError when the blocks cannot be staged (nothing is posted,
  // the link stays usable: send them another way), KvLinkError for an unknown or broken link, or one that
  // failed to take the send (then broken).
  void send(const std::string& key, uint64_t tag, std::span<const int> blocks, double now);
  // Posts a receive of `floats` into staging. Throws KvLinkError for an unknown or broken link. With no device
  // memory for its staging, it waits (and every receive after it: the link pairs them in posting order) until
  // landed KV frees some, within its deadline; a post that fails breaks the link (reported by the next poll).
  void recv(const std::string& key, uint64_t tag, int64_t floats, double now);
  // What finished or failed since the last call.
  std::vector<KvLinkEvent> poll(double now);
  // Writes a finished receive into these blocks (before any later pass) and frees its staging.
  void land(uint64_t tag, std::span<const int> blocks);
  // Gives a link up: whatever is in flight on it fails (with the next poll).
  void close(const std::string& key) {
    if (links_.count(key)) fail(key, "link " + key + " was closed");
  }
  // Frees a finished receive nobody wants.
  void drop(uint64_t tag) { received_.erase(tag); }
  bool busy() const;  // something to poll for
  int num_links() const { return int(links_.size()); }

 private:
  struct Transfer {
    uint64_t tag, ticket;
    std::unique_ptr<KvStaging> staging;  // null: a receive waiting for staging memory, not posted yet
    double deadline;
    bool is_recv;
    int64_t floats;  // a receive's size
  };
  struct Link {
    std::unique_ptr<KvLink> link;
    uint64_t open_tag;
    double open_deadline;
    bool up = false;
    std::vector<Transfer> in_flight;  // posting order
  };
  Link& usable(const std::string& key);
  // Posts the link's waiting receives, in order, as far as staging memory allows; what a failed post threw, else "".
  std::string post_waiting(Link& l);
  void fail(const std::string& key, const std::string& why);  // aborts the link; its failures go out with the next poll

  DeviceModel& device_;
  std::shared_ptr<KvLinkFactory> factory_;
  double timeout_s_;
  std::map<std::string, Link> links_;
  std::map<uint64_t, std::unique_ptr<KvStaging>> received_;  // finished receives awaiting land() or drop()
  std::vector<KvLinkEvent> failed_;                          // for the next poll
};

}  // namespace parley
