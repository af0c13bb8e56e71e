// KV as bytes over TCP: read from the blocks when sent, it rides with the request's header through the actors
// (encode_kv_transfer); received, it waits here until the scheduler lands it in the request's blocks or drops it.
#pragma once
#include <map>
#include <utility>

#include "engine/kv_transfer_backend.hpp"

namespace parley {

class KvBytesBackend final : public KvTransferBackend {
 public:
  explicit KvBytesBackend(DeviceModel& device) : device_(device) {}
  std::string name() const override { return "tcp"; }
  std::vector<uint8_t> start_send(const std::string& req_id, const std::string& link, std::span<const int> blocks,
                                  double now) override;
  void start_recv(const std::string& req_id, const std::string& link, int64_t num_bytes, std::vector<uint8_t> inline_kv,
                  double now) override;
  void land(const std::string& req_id, std::span<const int> blocks) override;
  void drop(const std::string& req_id) override { received_.erase(req_id); }
  std::vector<KvBackendEvent> poll(double) override { return std::exchange(events_, {}); }
  bool busy() const override { return !events_.empty(); }

 private:
  DeviceModel& device_;
  std::map<std::string, std::vector<uint8_t>> received_;  // awaiting land() or drop()
  std::vector<KvBackendEvent> events_;                    // every transfer is done at once: for the next poll
};

}  // namespace parley
