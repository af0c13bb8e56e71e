// The decode side's view of its prefill instances: which are up, which transfers are in
// flight to each and until when, and which instance a new prompt goes to (round robin, or the least
// loaded, among those up). A plain class: the KV transfer actor is its shell.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
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

class PrefillRouter {
 public:
  PrefillRouter(std::vector<PeerAddress> peers, RoutingPolicy policy);

  size_t num_peers() const { return peers_.size(); }
  const PeerAddress& address(size_t peer) const { return peers_[peer].address; }
  bool is_up(size_t peer) const { return peers_[peer].up; }
  // A peer that failed authentication is not connected to again before `until`.
  void hold_off(size_t peer, double until) { peers_[peer].held_until = until; }
  bool held_off(size_t peer, double now) const { return now < peers_[peer].held_until; }
  // Marks a peer up or down; going down returns the requests in flight to it (they have failed).
  std::vector<std::string> set_up(size_t peer, bool up);

  // The peer for a new prompt among those up, or nullopt when none is.
  std::optional<size_t> pick();
  // A transfer from `peer` for the request is expected by `deadline` (seconds, any clock the caller keeps).
  void started(const std::string& req_id, size_t peer, double deadline);
  // The transfer ended (arrived, failed or abandoned): the peer it was in flight from, if it was.
  std::optional<size_t> finished(const std::string& req_id);
  std::optional<size_t> peer_of(const std::string& req_id) const;
  // Requests whose deadline has passed.
  std::vector<std::string> expired(double now) const;
  size_t in_flight(size_t peer) const { return peers_[peer].in_flight; }
  size_t in_flight() const { return transfers_.size(); }

 private:
  struct Peer {
    PeerAddress address;
    bool up = false;
    size_t in_flight = 0;
    double held_until = 0;
  };
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
