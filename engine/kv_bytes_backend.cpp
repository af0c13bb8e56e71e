#include "engine/kv_bytes_backend.hpp"

#include "model/device_model.hpp"

namespace parley {

void KvTransferBackend::open_link(const std::string&, const std::string&, int, double) {
  throw std::logic_error(name() + " has no links");
}

std::vector<uint8_t> KvBytesBackend::start_send(const std::string& req_id, const std::string&,
                                                std::span<const int> blocks, double) {
  std::vector<uint8_t> kv = device_.export_blocks(blocks);
  events_.push_back({KvBackendEvent::Kind::Sent, req_id, ""});
  return kv;
}

void KvBytesBackend::start_recv(const std::string& req_id, const std::string&, int64_t num_bytes,
                                std::vector<uint8_t> inline_kv, double) {
  if (int64_t(inline_kv.size()) != num_bytes)
    throw std::invalid_argument("request " + req_id + ": " + std::to_string(inline_kv.size()) +
                                " bytes of KV arrived, its header says " + std::to_string(num_bytes));
  received_[req_id] = std::move(inline_kv);
  events_.push_back({KvBackendEvent::Kind::Received, req_id, ""});
}

void KvBytesBackend::land(const std::string& req_id, std::span<const int> blocks) {
  const auto it = received_.find(req_id);
  if (it == received_.end()) throw std::invalid_argument("no KV received for request " + req_id);
  const std::vector<uint8_t> kv = std::move(it->second);
  received_.erase(it);
  device_.import_blocks(blocks, kv);
}

}  // namespace parley
