// The KV transfer actor's two sides as plain state (engine/kv_transfer_sides.hpp), driven with a clock in
// the test's hand: a prefill instance's decode clients (who awaits which KV, leases and their expiry, the
// device link to each), and a decode instance's device links to its prefill instances (one state per peer,
// reopened a retry interval after a failure). No actors, no sleeps.
#include <catch2/catch.hpp>

#include "engine/kv_transfer_sides.hpp"
#include "engine/prefill_router.hpp"

using namespace parley;

TEST_CASE("kv transfer sides: a pushed request's blocks are leased until acknowledged or expired", "[pd][sides]") {
  DecodeClients<std::string> clients(30.0);
  clients.accept("a", "decode-1");
  clients.accept("b", "decode-2");
  clients.accept("c", "decode-1");
  CHECK(clients.num_awaiting() == 3);

  CHECK(clients.awaiting("a") == std::optional<std::string>("decode-1"));
  CHECK_FALSE(clients.awaiting("z"));
  CHECK(clients.pushed("a", 100.0) == std::optional<std::string>("decode-1"));
  CHECK_FALSE(clients.awaiting("a"));
  CHECK_FALSE(clients.pushed("a", 101.0));  // pushed once; nobody awaits it now: its blocks are freed
  CHECK(clients.pushed("b", 110.0) == std::optional<std::string>("decode-2"));
  CHECK(clients.refused("c") == std::optional<std::string>("decode-1"));
  CHECK_FALSE(clients.refused("c"));
  CHECK(clients.num_awaiting() == 0);
  CHECK(clients.num_leased() == 2);

  CHECK(clients.expired(129.9).empty());
  CHECK(clients.acknowledged("b"));
  CHECK_FALSE(clients.acknowledged("b"));                          // once
  CHECK(clients.expired(130.0) == std::vector<std::string>{"a"});  // at its end, not before
  CHECK_FALSE(clients.acknowledged("a"));                          // a late acknowledgement frees nothing twice
  CHECK(clients.num_leased() == 0);
}

TEST_CASE("kv transfer sides: a prefill instance's device links follow their decode instances", "[pd][sides]") {
  DecodeClients<std::string> clients(30.0);
  CHECK(clients.link_up("decode-1", "L1").empty());
  CHECK(clients.link_up("decode-2", "L2").empty());
  CHECK(clients.link_to("decode-1") == "L1");        // KV to it goes on the link
  CHECK(clients.link_up("decode-1", "L3") == "L1");  // a new link replaces the old, which is closed
  CHECK(clients.link_to("decode-1") == "L3");
  CHECK(clients.link_broken("L2") == std::vector<std::string>{"decode-2"});  // told: its end closes too
  CHECK(clients.link_to("decode-2").empty());
  CHECK(clients.link_broken("L2").empty());
  CHECK(clients.forget_link_where([](const std::string& d) { return d == "decode-1"; }) == "L3");
  CHECK(clients.forget_link("decode-1").empty());
  CHECK(clients.num_links() == 0);
}

TEST_CASE("kv transfer sides: a decode instance's link per prefill peer, reopened a retry interval after it fails",
          "[pd][sides]") {
  using State = PeerLink::State;
  PrefillRouter<int> peers({PeerAddress::parse("a:1"), PeerAddress::parse("b:2")}, RoutingPolicy::RoundRobin);
  PeerLink& link = peers.peer(0).link;
  CHECK(link.state == State::None);
  CHECK(link.opening("L1").empty());
  CHECK(link.state == State::Opening);
  CHECK_FALSE(link.opened("L0"));  // another link's answer
  CHECK(link.opened("L1"));
  CHECK(link.state == State::Up);
  CHECK(link.opening("L2") == "L1");  // reopened: the old one closes
  link.failed("L1", 80.0);            // the old link's failure no longer matters
  CHECK(link.state == State::Opening);
  link.failed("L2", 80.0);
  CHECK(link.state == State::Broken);
  CHECK(link.name.empty());
  CHECK_FALSE(link.reopen_due(79.9));
  CHECK(link.reopen_due(80.0));
  CHECK_FALSE(link.opened("L2"));  // a late success of a failed link does not bring it up

  PeerLink& other = peers.peer(1).link;
  other.opening("M1");
  other.opened("M1");
  peers.link_broken("M1", 40.0);  // broke on the prefill side: named, not indexed
  CHECK(other.state == State::Broken);
  CHECK(peers.peer(0).link.retry_at == 80.0);  // the other peer's link is untouched
  CHECK(other.reopen_due(40.0));
  other.fail(75.0);  // no link id this time: tried again later still
  CHECK_FALSE(other.reopen_due(50.0));
  CHECK(other.close().empty());
  CHECK(other.state == State::None);
  CHECK_FALSE(other.reopen_due(1000.0));  // a peer that went down opens no link until it is up again
}
