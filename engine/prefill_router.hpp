// The decode side's view of its prefill instances, one Peer each: its connection and handle, the transfers in
// flight from it and until when, and its device link; and which instance a new prompt goes to (round robin, or
// the least loaded, among those up). Plain state: the decode KV transfer actor is its shell. Handle is that
// actor's handle to a prefill instance (anything copyable in tests).
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace parley {

enum class RoutingPolicy { RoundRobin, LeastLoaded };

struct PeerAddress {
  std::string host;
  uint16_t port = 0;
  // "host:port"; throws std::invalid_argument naming the bad entry.
  static PeerAddress parse(const std::string& text);
  std::string str() const { return host + ":" + std::to_string(port); }
};

// A decode instance's device link to one prefill instance. It is opened once the peer is up; one that fails to
// open or breaks leaves that peer's KV on TCP and is opened again a retry interval later (one attempt per
// interval: a dead NIC costs no more than that).
struct PeerLink {
  enum class State {
    None,     // no device links, or closed with the connection
    Opening,  // both workers are opening their ends of the link
    Up,       // KV from this peer may come on it
    Broken,   // failed to open or broke: KV comes over TCP until it is opened again
  };
  State state = State::None;
  std::string name;     // Opening or Up
  double retry_at = 0;  // Broken

  // A new link is opening as `name`: the one it replaces ("" if none), to close.
  std::string opening(const std::string& link) {
    std::string old = close();
    *this = {State::Opening, link, 0};
    return old;
  }
  // Both ends are open: true unless the link was replaced or closed meanwhile.
  bool opened(const std::string& link) {
    if (name != link || state != State::Opening) return false;
    state = State::Up;
    return true;
  }
  // The link `link` failed to open or broke (ignored when it is not this one any more): retried at `retry`.
  void failed(const std::string& link, double retry) {
    if (name == link) fail(retry);
  }
  // No link id could even be had: it is tried again at `retry`.
  void fail(double retry) { *this = {State::Broken, "", retry}; }
  // The peer went down (or its connection closed): the link, to close ("" if none).
  std::string close() { return std::exchange(*this, {}).name; }
  // A broken link due to be opened again.
  bool reopen_due(double now) const { return state == State::Broken && now >= retry_at; }
};

template <class Handle>
class PrefillRouter {
 public:
  enum class Connection { Down, Connecting, Up };
  struct Peer {
    PeerAddress address;
    Connection connection = Connection::Down;
    Handle actor{};         // Up: connected (and with --kv-secret authenticated)
    size_t in_flight = 0;   // transfers expected from it
    double held_until = 0;  // failed authentication: not connected to again before this
    PeerLink link;
  };

  PrefillRouter(std::vector<PeerAddress> peers, RoutingPolicy policy) : policy_(policy) {
    for (PeerAddress& a : peers) {
      Peer& p = peers_.emplace_back();
      p.address = std::move(a);
    }
  }

  size_t num_peers() const { return peers_.size(); }
  Peer& peer(size_t p) { return peers_.at(p); }
  const Peer& peer(size_t p) const { return peers_.at(p); }
  const PeerAddress& address(size_t p) const { return peer(p).address; }
  bool is_up(size_t p) const { return peer(p).connection == Connection::Up; }
  // Not up, not connecting, not held off: time to connect.
  bool connect_due(size_t p, double now) const {
    return peer(p).connection == Connection::Down && now >= peer(p).held_until;
  }
  void connecting(size_t p) { peer(p).connection = Connection::Connecting; }
  // The connection attempt failed; with `hold_until` (failed authentication) not retried before then.
  void connect_failed(size_t p, double hold_until = 0) {
    peer(p).connection = Connection::Down;
    peer(p).held_until = hold_until;
  }
  void up(size_t p, Handle actor) {
    peer(p).connection = Connection::Up;
    peer(p).actor = std::move(actor);
  }
  // The peer went down: the requests in flight to it (they have failed). Its link is closed (link.close() first).
  std::vector<std::string> down(size_t p) {
    peer(p).connection = Connection::Down;
    peer(p).actor = Handle{};
    std::vector<std::string> lost;
    for (const auto& [id, t] : transfers_)
      if (t.peer == p) lost.push_back(id);
    for (const std::string& id : lost) finished(id);
    return lost;
  }
  // The device link named `name` broke, whichever peer it was to: it is retried at `retry`.
  void link_broken(const std::string& name, double retry) {
    for (Peer& p : peers_)
      if (!name.empty() && p.link.name == name) p.link.fail(retry);
  }

  // The peer for a new prompt among those up, or nullopt when none is.
  std::optional<size_t> pick() {
    std::optional<size_t> best;
    for (size_t i = 0; i < peers_.size(); ++i) {
      const size_t p = (next_ + i) % peers_.size();  // round robin order; ties in load go the same way
      if (!is_up(p)) continue;
      if (!best || (policy_ == RoutingPolicy::LeastLoaded && peers_[p].in_flight < peers_[*best].in_flight)) best = p;
      if (policy_ == RoutingPolicy::RoundRobin) break;
    }
    if (best) next_ = (*best + 1) % peers_.size();
    return best;
  }
  // A transfer from `peer` for the request is expected by `deadline` (seconds, any clock the caller keeps).
  void started(const std::string& req_id, size_t p, double deadline) {
    if (!transfers_.emplace(req_id, Transfer{p, deadline}).second)
      throw std::logic_error("a transfer for request " + req_id + " is in flight already");
    ++peer(p).in_flight;
  }
  // The transfer ended (arrived, failed or abandoned): the peer it was in flight from, if it was.
  std::optional<size_t> finished(const std::string& req_id) {
    const auto it = transfers_.find(req_id);
    if (it == transfers_.end()) return std::nullopt;
    const size_t p = it->second.peer;
    --peers_[p].in_flight;
    transfers_.erase(it);
    return p;
  }
  // Requests whose deadline has passed.
  std::vector<std::string> expired(double now) const {
    std::vector<std::string> out;
    for (const auto& [id, t] : transfers_)
      if (t.deadline <= now) out.push_back(id);
    return out;
  }
  size_t in_flight(size_t p) const { return peer(p).in_flight; }
  size_t in_flight() const { return transfers_.size(); }

 private:
  struct Transfer {
    size_t peer;
    double deadline;
  };
  std::vector<Peer> peers_;
  RoutingPolicy policy_;
  size_t next_ = 0;  // round robin
  std::unordered_map<std::string, Transfer> transfers_;
};

}  // namespace parley
