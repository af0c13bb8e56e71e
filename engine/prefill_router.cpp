#include "engine/prefill_router.hpp"

#include <stdexcept>

namespace parley {

PeerAddress PeerAddress::parse(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw std::invalid_argument("prefill peer '" + text + "' is not host:port");
  int port = 0;
  try {
    size_t used = 0;
    port = std::stoi(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1) port = -1;
  } catch (const std::exception&) {
    port = -1;
  }
  if (port < 1 || port > 65535) throw std::invalid_argument("prefill peer '" + text + "' has no valid port");
  return {text.substr(0, colon), uint16_t(port)};
}

PrefillRouter::PrefillRouter(std::vector<PeerAddress> peers, RoutingPolicy policy) : policy_(policy) {
  for (PeerAddress& a : peers) peers_.push_back({std::move(a), false, 0});
}

std::vector<std::string> PrefillRouter::set_up(size_t peer, bool up) {
  peers_.at(peer).up = up;
  std::vector<std::string> lost;
  if (up) return lost;
  for (const auto& [id, t] : transfers_)
    if (t.peer == peer) lost.push_back(id);
  for (const std::string& id : lost) finished(id);
  return lost;
}

std::optional<size_t> PrefillRouter::pick() {
  std::optional<size_t> best;
  for (size_t i = 0; i < peers_.size(); ++i) {
    const size_t p = (next_ + i) % peers_.size();  // round robin order; ties in load go the same way
    if (!peers_[p].up) continue;
    if (!best || (policy_ == RoutingPolicy::LeastLoaded && peers_[p].in_flight < peers_[*best].in_flight)) best = p;
    if (policy_ == RoutingPolicy::RoundRobin) break;
  }
  if (best) next_ = (*best + 1) % peers_.size();
  return best;
}

void PrefillRouter::started(const std::string& req_id, size_t peer, double deadline) {
  if (!transfers_.emplace(req_id, Transfer{peer, deadline}).second)
    throw std::logic_error("a transfer for request " + req_id + " is in flight already");
  ++peers_.at(peer).in_flight;
}

std::optional<size_t> PrefillRouter::finished(const std::string& req_id) {
  const auto it = transfers_.find(req_id);
  if (it == transfers_.end()) return std::nullopt;
  const size_t peer = it->second.peer;
  --peers_[peer].in_flight;
  transfers_.erase(it);
  return peer;
}

std::optional<size_t> PrefillRouter::peer_of(const std::string& req_id) const {
  const auto it = transfers_.find(req_id);
  return it == transfers_.end() ? std::nullopt : std::optional<size_t>(it->second.peer);
}

std::vector<std::string> PrefillRouter::expired(double now) const {
  std::vector<std::string> out;
  for (const auto& [id, t] : transfers_)
    if (t.deadline <= now) out.push_back(id);
  return out;
}

}  // namespace parley
