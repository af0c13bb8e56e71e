// The KV transfer actor's two sides as plain state (engine/kv_transfer_sides.hpp), driven with a clock in
// the test's hand: a prefill instance's decode clients (who awaits which KV, leases and their expiry, the
// device link to each), and a decode instance's device links to its prefill instances (one state per peer,
// reopened a retry interval after a failure). No actors, no sleeps.
#include <catch2/catch.hpp>

#include "engine/kv_transfer_sides.hpp"

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
  using State = PrefillLinks::State;
  PrefillLinks links(2, 30.0);
  CHECK(links.state(0) == State::None);
  CHECK(links.opening(0, "L1").empty());
  CHECK(links.state(0) == State::Opening);
  CHECK_FALSE(links.opened(0, "L0"));  // another link's answer
  CHECK(links.opened(0, "L1"));
  CHECK(links.state(0) == State::Up);
  CHECK(links.opening(0, "L2") == "L1");  // reopened: the old one closes
  links.failed(0, "L1", 50.0);            // the old link's failure no longer matters
  CHECK(links.state(0) == State::Opening);
  links.failed(0, "L2", 50.0);
  CHECK(links.state(0) == State::Broken);
  CHECK(links.name(0).empty());
  CHECK_FALSE(links.reopen_due(0, 79.9));
  CHECK(links.reopen_due(0, 80.0));
  CHECK_FALSE(links.opened(0, "L2"));  // a late success of a failed link does not bring it up

  links.opening(1, "M1");
  links.opened(1, "M1");
  links.broken("M1", 10.0);  // broke on the prefill side: named, not indexed
  CHECK(links.state(1) == State::Broken);
  CHECK(links.reopen_due(1, 40.0));
  links.fail(1, 45.0);  // no link id this time: tried again later still
  CHECK_FALSE(links.reopen_due(1, 50.0));
  CHECK(links.close(1).empty());
  CHECK(links.state(1) == State::None);
  CHECK_FALSE(links.reopen_due(1, 1000.0));  // a peer that went down opens no link until it is up again
}
