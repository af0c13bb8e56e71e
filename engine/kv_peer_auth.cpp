#include "engine/kv_peer_auth.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace parley {
namespace {

std::string hex(const unsigned char* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) s[2 * i] = digits[data[i] >> 4], s[2 * i + 1] = digits[data[i] & 15];
  return s;
}

bool equal_in_constant_time(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

KvPeerAuth::KvPeerAuth(std::string secret) : secret_(std::move(secret)) {}

std::string KvPeerAuth::new_nonce() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("OpenSSL could not draw a random nonce");
  return hex(bytes, sizeof bytes);
}

std::string KvPeerAuth::mac(const std::string& direction, const std::string& first, const std::string& second) const {
  const std::string message = "parley-kv-auth|" + direction + "|" + first + "|" + second;
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret_.data(), int(secret_.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), out, &len);
  return hex(out, len);
}

KvPeerAuth::Answer KvPeerAuth::answer(const std::string& peer, const std::string& decode_nonce) {
  Answer a;
  a.nonce = new_nonce();
  a.proof = mac("prefill", decode_nonce, a.nonce);
  pending_[peer] = {decode_nonce, a.nonce};
  trusted_.erase(peer);  // a new challenge starts over
  return a;
}

bool KvPeerAuth::accept(const std::string& peer, const std::string& proof) {
  const auto it = pending_.find(peer);
  if (it == pending_.end()) return false;
  const auto [decode_nonce, prefill_nonce] = it->second;
  pending_.erase(it);  // one proof per challenge
  if (!equal_in_constant_time(proof, mac("decode", prefill_nonce, decode_nonce))) return false;
  trusted_.insert(peer);
  return true;
}

void KvPeerAuth::forget(const std::string& peer) {
  pending_.erase(peer);
  trusted_.erase(peer);
}

bool KvPeerAuth::prefill_proof_ok(const std::string& decode_nonce, const Answer& a) const {
  return !a.nonce.empty() && equal_in_constant_time(a.proof, mac("prefill", decode_nonce, a.nonce));
}

std::string KvPeerAuth::decode_proof(const std::string& decode_nonce, const std::string& prefill_nonce) const {
  return mac("decode", prefill_nonce, decode_nonce);
}

std::string read_kv_secret(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("--kv-secret: cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (!s.empty() && s.back() == '\n') s.pop_back();
  if (!s.empty() && s.back() == '\r') s.pop_back();
  if (s.size() < 16)
    throw std::runtime_error("--kv-secret: " + path + " holds " + std::to_string(s.size()) +
                             " bytes; a secret needs at least 16 (e.g. `openssl rand -hex 32 > FILE`)");
  return s;
}

}  // namespace parley
