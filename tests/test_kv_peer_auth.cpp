// KvPeerAuth: the --kv-secret exchange between a decode and a prefill instance, both directions.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "engine/kv_peer_auth.hpp"

using parley::KvPeerAuth;

namespace {

// The whole exchange; true when the prefill side ends trusting the peer and the decode side accepted it.
bool exchange(KvPeerAuth& decode, KvPeerAuth& prefill, const std::string& peer) {
  const std::string nonce = KvPeerAuth::new_nonce();
  const KvPeerAuth::Answer a = prefill.answer(peer, nonce);
  if (!decode.prefill_proof_ok(nonce, a)) return false;
  return prefill.accept(peer, decode.decode_proof(nonce, a.nonce)) && prefill.trusted(peer);
}

}  // namespace

TEST_CASE("kv peers with the same secret authenticate each other and others do not") {
  KvPeerAuth prefill("a-secret-of-sixteen+"), same("a-secret-of-sixteen+"), other("another-secret-16+");
  CHECK_FALSE(prefill.trusted("node-1"));
  CHECK(exchange(same, prefill, "node-1"));
  CHECK(prefill.trusted("node-1"));
  CHECK_FALSE(prefill.trusted("node-2"));

  // A decode instance with another secret rejects the prefill instance's answer...
  const std::string nonce = KvPeerAuth::new_nonce();
  const KvPeerAuth::Answer a = prefill.answer("node-2", nonce);
  CHECK_FALSE(other.prefill_proof_ok(nonce, a));
  // ...and its own proof is refused by the prefill instance.
  CHECK_FALSE(prefill.accept("node-2", other.decode_proof(nonce, a.nonce)));
  CHECK_FALSE(prefill.trusted("node-2"));
  CHECK(KvPeerAuth::new_nonce().size() == 64);
  CHECK(KvPeerAuth::new_nonce() != KvPeerAuth::new_nonce());
}

TEST_CASE("a kv peer proof is good once and only for its own challenge") {
  KvPeerAuth prefill("a-secret-of-sixteen+"), decode("a-secret-of-sixteen+");
  const std::string n1 = KvPeerAuth::new_nonce();
  const KvPeerAuth::Answer a1 = prefill.answer("node-1", n1);
  const std::string proof1 = decode.decode_proof(n1, a1.nonce);
  // A new challenge replaces the first: the first proof no longer counts.
  const std::string n2 = KvPeerAuth::new_nonce();
  const KvPeerAuth::Answer a2 = prefill.answer("node-1", n2);
  CHECK_FALSE(prefill.accept("node-1", proof1));
  // The proof of the second challenge counts once; after it, a replay finds no challenge.
  const KvPeerAuth::Answer a3 = prefill.answer("node-1", n2);
  CHECK(prefill.accept("node-1", decode.decode_proof(n2, a3.nonce)));
  CHECK_FALSE(prefill.accept("node-1", decode.decode_proof(n2, a3.nonce)));
  // The prefill side's proof is bound to its direction: it does not pass as a decode proof.
  const KvPeerAuth::Answer a4 = prefill.answer("node-3", n1);
  CHECK_FALSE(prefill.accept("node-3", a4.proof));
  // An answer from a prefill instance without a secret (empty) is refused.
  CHECK_FALSE(decode.prefill_proof_ok(n1, {"", ""}));
  (void)a2;
}

TEST_CASE("the kv secret file is read whole and a short one is refused") {
  const std::string path = "kv_secret_test.txt";
  std::ofstream(path) << "0123456789abcdef0123\n";
  CHECK(parley::read_kv_secret(path) == "0123456789abcdef0123");
  std::ofstream(path) << "short\n";
  CHECK_THROWS_WITH(parley::read_kv_secret(path), Catch::Contains("at least 16"));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(parley::read_kv_secret("no/such/file"), Catch::Contains("cannot read"));
}
