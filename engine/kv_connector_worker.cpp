#include "engine/kv_connector_worker.hpp"

#include <stdexcept>

#include "engine/kv_bytes_backend.hpp"
#include "engine/kv_link_backend.hpp"

namespace parley {

using Kind = KvBackendEvent::Kind;

std::vector<std::unique_ptr<KvTransferBackend>> make_kv_transfer_backends(DeviceModel& device,
                                                                          std::shared_ptr<KvLinkFactory> links,
                                                                          double timeout_s) {
  std::vector<std::unique_ptr<KvTransferBackend>> backends;
  backends.push_back(std::make_unique<KvBytesBackend>(device));
  if (links) backends.push_back(std::make_unique<KvLinkBackend>(device, std::move(links), timeout_s));
  return backends;
}

KvConnectorWorker::KvConnectorWorker(std::vector<std::unique_ptr<KvTransferBackend>> backends)
    : backends_(std::move(backends)) {
  for (const auto& b : backends_) {
    KvTransferBackend*& first = b->has_links() ? links_ : bytes_;
    if (!first) first = b.get();
  }
  if (!bytes_) throw std::invalid_argument("a KV connector needs a backend that carries KV inline");
}

KvTransferBackend& KvConnectorWorker::link_backend() {
  if (!links_) throw std::logic_error("this instance has no device link transport (--kv-transport nccl)");
  return *links_;
}

void KvConnectorWorker::open_link(const std::string& name, const std::string& id, int rank, double now, Done opened) {
  link_backend().open_link(name, id, rank, now);
  opening_[name] = std::move(opened);
}

void KvConnectorWorker::close_link(const std::string& name) {
  if (links_) links_->close_link(name);
}

KvConnectorWorker::Started KvConnectorWorker::start_send(const std::string& req_id, const std::string& link,
                                                         std::span<const int> blocks, double now) {
  if (!link.empty()) try {
      link_backend().start_send(req_id, link, blocks, now);
      sending_[req_id] = {};
      return {link, {}};
    } catch (const KvStagingError&) {
      // Nothing was posted and the link is fine: this KV rides inline instead.
    }
  Started started{"", bytes_->start_send(req_id, "", blocks, now)};
  settle(bytes_->poll(now));
  return started;
}

void KvConnectorWorker::when_sent(const std::string& req_id, Done sent) {
  const auto it = sending_.find(req_id);
  if (it == sending_.end()) return sent("no KV send for request " + req_id);
  if (!it->second.finished) return void(it->second.waiter = std::move(sent));
  const std::string error = it->second.error;
  sending_.erase(it);
  sent(error);
}

void KvConnectorWorker::start_recv(const std::string& req_id, const std::string& link, int64_t num_bytes,
                                   std::vector<uint8_t> inline_kv, double now, Done received) {
  KvTransferBackend& backend = backend_for(link);
  backend.start_recv(req_id, link, num_bytes, std::move(inline_kv), now);
  receiving_[req_id] = std::move(received);
  received_on_[req_id] = &backend;
  if (&backend == bytes_) settle(bytes_->poll(now));  // in at once
}

void KvConnectorWorker::land(const std::string& req_id, std::span<const int> blocks) {
  const auto it = received_on_.find(req_id);
  if (it == received_on_.end()) throw std::invalid_argument("no KV received for request " + req_id);
  KvTransferBackend& backend = *it->second;
  received_on_.erase(it);
  backend.land(req_id, blocks);
}

void KvConnectorWorker::drop(const std::string& req_id) {
  if (const auto it = received_on_.find(req_id); it != received_on_.end()) {
    it->second->drop(req_id);
    received_on_.erase(it);
  }
}

KvConnectorWorker::Finished KvConnectorWorker::get_finished(double now) {
  for (const auto& b : backends_) settle(b->poll(now));
  return std::exchange(finished_, {});
}

bool KvConnectorWorker::busy() const {
  if (!finished_.sending.empty() || !finished_.receiving.empty()) return true;  // for get_finished to collect
  for (const auto& b : backends_)
    if (b->busy()) return true;
  return false;
}

void KvConnectorWorker::tell(std::map<std::string, Done>& waiters, const std::string& key, const std::string& error) {
  const auto it = waiters.find(key);
  if (it == waiters.end()) return;
  Done done = std::move(it->second);
  waiters.erase(it);
  if (done) done(error);
}

void KvConnectorWorker::settle_send(const KvBackendEvent& e) {
  finished_.sending.push_back(e.key);
  const auto it = sending_.find(e.key);
  if (it == sending_.end()) return;  // inline: done as it started
  const std::string error = e.kind == Kind::SendFailed ? e.why : "";
  if (!it->second.waiter) return void(it->second = {true, error, nullptr});
  Done waiter = std::move(it->second.waiter);
  sending_.erase(it);
  waiter(error);
}

void KvConnectorWorker::settle(const std::vector<KvBackendEvent>& events) {
  for (const KvBackendEvent& e : events) switch (e.kind) {
      case Kind::LinkUp:
      case Kind::LinkFailed:
        tell(opening_, e.key, e.kind == Kind::LinkFailed ? e.why : "");
        break;
      case Kind::Sent:
      case Kind::SendFailed:
        settle_send(e);
        break;
      case Kind::Received:
      case Kind::ReceiveFailed:
        if (e.kind == Kind::ReceiveFailed) received_on_.erase(e.key);
        finished_.receiving.push_back(e.key);
        tell(receiving_, e.key, e.kind == Kind::ReceiveFailed ? e.why : "");
        break;
    }
}

}  // namespace parley
