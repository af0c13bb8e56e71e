// A prefill instance's KV transfer state as plain data, so that what it decides is tested without actors,
// sockets or sleeps (tests/test_kv_transfer_sides.cpp): DecodeClients, which decode instance awaits each
// request's KV, the leases on blocks pushed but not acknowledged, and the device link to each decode instance.
// (A decode instance's side is engine/prefill_router.hpp.) Peer is the decode instance's handle (caf::actor in
// the actor, anything comparable in tests).
#pragma once
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace parley {

template <class Peer>
class DecodeClients {
 public:
  explicit DecodeClients(double lease_s) : lease_s_(lease_s) {}

  // A request routed here by `decode`.
  void accept(const std::string& req_id, Peer decode) { awaiting_[req_id] = std::move(decode); }
  // The decode instance awaiting the request's KV, if any.
  std::optional<Peer> awaiting(const std::string& req_id) const {
    const auto it = awaiting_.find(req_id);
    if (it == awaiting_.end()) return std::nullopt;
    return it->second;
  }
  // Its KV is pushed now: the instance to send it to (its blocks leased until acknowledged or `now` + the
  // lease), or nullopt when nobody awaits it any more (free its blocks).
  std::optional<Peer> pushed(const std::string& req_id, double now) {
    std::optional<Peer> to = take(req_id);
    if (to) leases_[req_id] = now + lease_s_;
    return to;
  }
  // It cannot run here: the instance to tell, if any.
  std::optional<Peer> refused(const std::string& req_id) { return take(req_id); }
  // The decode instance has the KV: true when the blocks were still leased (free them now).
  bool acknowledged(const std::string& req_id) { return leases_.erase(req_id) > 0; }
  // Leases past their end: their blocks are freed without an acknowledgement.
  std::vector<std::string> expired(double now) {
    std::vector<std::string> ids;
    for (auto it = leases_.begin(); it != leases_.end();)
      if (it->second <= now)
        ids.push_back(it->first), it = leases_.erase(it);
      else
        ++it;
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  // Device links. The link to `decode` is up as `name`; returns the one it replaces ("" if none), to close.
  std::string link_up(const Peer& decode, const std::string& name) {
    std::string old = std::exchange(links_[decode], name);
    return old == name ? "" : old;
  }
  // Before opening a new link to `decode`, or when it went away: the old one to close ("" if none).
  std::string forget_link(const Peer& decode) {
    return forget_link_where([&](const Peer& p) { return p == decode; });
  }
  template <class Match>
  std::string forget_link_where(Match match) {
    for (auto it = links_.begin(); it != links_.end(); ++it)
      if (match(it->first)) {
        std::string old = std::move(it->second);
        links_.erase(it);
        return old;
      }
    return "";
  }
  // The link named `name` broke: the decode instances on it (to tell: their end closes too).
  std::vector<Peer> link_broken(const std::string& name) {
    std::vector<Peer> on_it;
    for (auto it = links_.begin(); it != links_.end();)
      if (it->second == name)
        on_it.push_back(it->first), it = links_.erase(it);
      else
        ++it;
    return on_it;
  }
  std::string link_to(const Peer& decode) const {
    const auto it = links_.find(decode);
    return it == links_.end() ? "" : it->second;
  }

  size_t num_awaiting() const { return awaiting_.size(); }
  size_t num_leased() const { return leases_.size(); }
  size_t num_links() const { return links_.size(); }

 private:
  std::optional<Peer> take(const std::string& req_id) {
    const auto it = awaiting_.find(req_id);
    if (it == awaiting_.end()) return std::nullopt;
    Peer to = std::move(it->second);
    awaiting_.erase(it);
    return to;
  }

  double lease_s_;
  std::unordered_map<std::string, Peer> awaiting_;  // routed here, KV not pushed yet
  std::unordered_map<std::string, double> leases_;  // pushed: blocks held until acknowledged or this time
  std::map<Peer, std::string> links_;               // decode instance -> the device link to it, once up
};

}  // namespace parley
