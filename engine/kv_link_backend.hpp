// KV GPU to GPU on device links (engine/kv_links.hpp, model/kv_link.hpp): only the header rides through the
// actors; the request's KV follows on the link it names, received into staging until the scheduler lands it in the
// request's blocks or drops it.
#pragma once
#include <map>

#include "engine/kv_links.hpp"

namespace parley {

class KvLinkBackend final : public KvTransferBackend {
 public:
  KvLinkBackend(DeviceModel& device, std::shared_ptr<KvLinkFactory> factory, double timeout_s)
      : links_(device, factory, timeout_s), transport_(factory->transport()) {}
  std::string name() const override { return transport_; }
  bool has_links() const override { return true; }
  std::string new_link_id() override { return links_.new_id(); }
  void open_link(const std::string& name, const std::string& id, int rank, double now) override;
  void close_link(const std::string& name) override { links_.close(name); }
  std::vector<uint8_t> start_send(const std::string& req_id, const std::string& link, std::span<const int> blocks,
                                  double now) override;
  void start_recv(const std::string& req_id, const std::string& link, int64_t num_bytes, std::vector<uint8_t> inline_kv,
                  double now) override;
  void land(const std::string& req_id, std::span<const int> blocks) override;
  void drop(const std::string& req_id) override;
  std::vector<KvBackendEvent> poll(double now) override;
  bool busy() const override { return links_.busy(); }

 private:
  // What a KvLinks tag stands for: an open (key: the link's name), a send or a receive (key: the request id).
  struct Tagged {
    KvBackendEvent::Kind done, failed;
    std::string key;
  };
  uint64_t tag_for(KvBackendEvent::Kind done, KvBackendEvent::Kind failed, const std::string& key);
  uint64_t take_received(const std::string& req_id);

  KvLinks links_;
  std::string transport_;
  uint64_t next_tag_ = 1;
  std::map<uint64_t, Tagged> in_flight_;
  std::map<std::string, uint64_t> received_;  // request id -> its finished receive's tag, until land() or drop()
};

}  // namespace parley
