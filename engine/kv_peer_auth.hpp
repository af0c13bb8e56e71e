// Mutual challenge-response between a decode instance and a prefill instance that share --kv-secret,
// before the prefill instance handles any other message from that peer. HMAC-SHA256 (OpenSSL) over both
// sides' fresh nonces, each proof bound to its direction, so neither a proof nor a replayed exchange
// authenticates anyone else.
//   decode  -> prefill  challenge(decode_nonce)
//   prefill -> decode   prefill_nonce, HMAC(secret, "prefill" | decode_nonce | prefill_nonce)
//   decode  -> prefill  HMAC(secret, "decode" | prefill_nonce | decode_nonce)   (then the peer is trusted)
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>

namespace parley {

class KvPeerAuth {
 public:
  explicit KvPeerAuth(std::string secret = "");
  bool enabled() const { return !secret_.empty(); }

  // 32 random bytes, hex.
  static std::string new_nonce();

  // Prefill side: a decode peer's challenge. Remembers the pair for the peer's proof.
  struct Answer {
    std::string nonce, proof;
  };
  Answer answer(const std::string& peer, const std::string& decode_nonce);
  // Prefill side: the peer's proof for its last challenge. True (and the peer trusted) when it holds the secret.
  bool accept(const std::string& peer, const std::string& proof);
  bool trusted(const std::string& peer) const { return trusted_.count(peer) > 0; }
  void forget(const std::string& peer);

  // Decode side: whether the prefill instance's answer proves the secret, and this side's proof.
  bool prefill_proof_ok(const std::string& decode_nonce, const Answer& a) const;
  std::string decode_proof(const std::string& decode_nonce, const std::string& prefill_nonce) const;

 private:
  std::string mac(const std::string& direction, const std::string& first, const std::string& second) const;

  std::string secret_;
  std::map<std::string, std::pair<std::string, std::string>> pending_;  // peer -> (decode nonce, prefill nonce)
  std::set<std::string> trusted_;
};

// Reads --kv-secret's file: the whole file is the secret (at least 16 bytes, a trailing newline dropped).
// Throws std::runtime_error naming the file and what is wrong.
std::string read_kv_secret(const std::string& path);

}  // namespace parley
