// The KV transfer actor's two sides as plain state, so that what it decides is tested without actors,
// sockets or sleeps (tests/test_kv_transfer_sides.cpp):
// - a prefill instance's DecodeClients: which decode instance awaits each request's KV, the leases on blocks
//   pushed but not acknowledged, and the device link to each decode instance;
// - a decode instance's PrefillLinks: the device link to each prefill instance, as one state per peer, and
//   when a broken one is opened again.
// Peer is the decode instance's handle (caf::actor in the actor, anything comparable in tests).
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

// A decode instance's device links, one per prefill peer (the router's index). A link is opened once the peer
// is up; one that fails to open or breaks leaves that peer's KV on TCP and is opened again a retry interval
// later (one attempt per interval: a dead NIC costs no more than that).
class PrefillLinks {
 public:
  enum class State {
    None,     // no device links, or closed with the connection
    Opening,  // both workers are opening their ends of the link
    Up,       // KV from this peer may come on it
    Broken,   // failed to open or broke: KV comes over TCP until it is opened again
  };

  PrefillLinks(size_t num_peers, double retry_s) : peers_(num_peers), retry_s_(retry_s) {}

  // A new link to `peer` is opening as `name`: the one it replaces ("" if none), to close.
  std::string opening(size_t peer, const std::string& name) {
    std::string old = close(peer);
    peers_[peer] = {State::Opening, name, 0};
    return old;
  }
  // Both ends are open: true unless the link was replaced or closed meanwhile.
  bool opened(size_t peer, const std::string& name) {
    if (peers_[peer].name != name || peers_[peer].state != State::Opening) return false;
    peers_[peer].state = State::Up;
    return true;
  }
  // The link `name` failed to open or broke (ignored when it is not this peer's any more).
  void failed(size_t peer, const std::string& name, double now) {
    if (peers_[peer].name == name) fail(peer, now);
  }
  // No link id could even be had: it is tried again later.
  void fail(size_t peer, double now) { peers_[peer] = {State::Broken, "", now + retry_s_}; }
  // The link `name` broke, whichever peer it was to.
  void broken(const std::string& name, double now) {
    for (size_t p = 0; p < peers_.size(); ++p)
      if (!name.empty() && peers_[p].name == name) fail(p, now);
  }
  // The peer went down (or its connection closed): its link, to close ("" if none).
  std::string close(size_t peer) { return std::exchange(peers_[peer], {}).name; }
  // Broken links due to be opened again.
  bool reopen_due(size_t peer, double now) const {
    return peers_[peer].state == State::Broken && now >= peers_[peer].retry_at;
  }
  State state(size_t peer) const { return peers_[peer].state; }
  const std::string& name(size_t peer) const { return peers_[peer].name; }

 private:
  struct Link {
    State state = State::None;
    std::string name;     // Opening or Up
    double retry_at = 0;  // Broken
  };
  std::vector<Link> peers_;
  double retry_s_;
};

}  // namespace parley
