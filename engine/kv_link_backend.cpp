#include "engine/kv_link_backend.hpp"

namespace parley {

using Kind = KvBackendEvent::Kind;

uint64_t KvLinkBackend::tag_for(Kind done, Kind failed, const std::string& key) {
  const uint64_t tag = next_tag_++;
  in_flight_[tag] = {done, failed, key};
  return tag;
}

void KvLinkBackend::open_link(const std::string& name, const std::string& id, int rank, double now) {
  links_.open(name, id, rank, tag_for(Kind::LinkUp, Kind::LinkFailed, name), now);
}

std::vector<uint8_t> KvLinkBackend::start_send(const std::string& req_id, const std::string& link,
                                               std::span<const int> blocks, double now) {
  const uint64_t tag = tag_for(Kind::Sent, Kind::SendFailed, req_id);
  try {
    links_.send(link, tag, blocks, now);
  } catch (...) {
    in_flight_.erase(tag);  // nothing posted under it (a failure the send caused reports its other transfers)
    throw;
  }
  return {};
}

void KvLinkBackend::start_recv(const std::string& req_id, const std::string& link, int64_t num_bytes,
                               std::vector<uint8_t>, double now) {
  const uint64_t tag = tag_for(Kind::Received, Kind::ReceiveFailed, req_id);
  try {
    links_.recv(link, tag, num_bytes / 4, now);  // the link's unit is a float (KvStaging)
  } catch (...) {
    in_flight_.erase(tag);
    throw;
  }
}

uint64_t KvLinkBackend::take_received(const std::string& req_id) {
  const auto it = received_.find(req_id);
  if (it == received_.end()) throw std::invalid_argument("no KV received for request " + req_id);
  const uint64_t tag = it->second;
  received_.erase(it);
  return tag;
}

void KvLinkBackend::land(const std::string& req_id, std::span<const int> blocks) {
  links_.land(take_received(req_id), blocks);
}

void KvLinkBackend::drop(const std::string& req_id) {
  if (received_.count(req_id)) links_.drop(take_received(req_id));
}

std::vector<KvBackendEvent> KvLinkBackend::poll(double now) {
  std::vector<KvBackendEvent> events;
  for (const KvLinkEvent& e : links_.poll(now)) {
    const auto it = in_flight_.find(e.tag);
    if (it == in_flight_.end()) continue;
    const Tagged t = std::move(it->second);
    in_flight_.erase(it);
    const bool failed = e.kind == KvLinkEvent::Kind::Failed;
    if (!failed && t.done == Kind::Received) {
      if (received_.count(t.key)) links_.drop(received_[t.key]);  // a second KV for one request: the last counts
      received_[t.key] = e.tag;
    }
    events.push_back({failed ? t.failed : t.done, t.key, e.why});
  }
  return events;
}

}  // namespace parley
