// Prefill/decode disaggregation through the actors with a device link, in one process: a
// prefill and a decode engine joined over CAF's loopback middleman, their workers over the in-process
// stand-in for NCCL. The link opens through the actors; only headers cross CAF while the KV goes over the
// link; the tokens equal colocated serving's, with aborts on the way and with two decode instances at once
// (the prefill instance closes the link of one that goes away); a link that breaks fails its transfers,
// which recompute, later KV goes over TCP, and a new link opens once it can; KV a link fails to take as it
// is posted goes over TCP (nothing recomputed) and both ends close that link; no block is left.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/admin_json.hpp"
#include "engine_client_util.hpp"
#include "host_kv_link.hpp"

namespace parley {
namespace {

// A TCP port free a moment ago (the prefill engine publishes its KV transfer actor there).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  socklen_t len = sizeof(a);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  close(fd);
  return ntohs(a.sin_port);
}

nlohmann::json admin_view(EngineClient& engine) {
  std::promise<std::string> p;
  engine.admin_requests([&p](const auto& v) { p.set_value(http::admin_requests_json(v)); });
  return nlohmann::json::parse(p.get_future().get());
}

// Waits until the decode engine's link to its prefill instance is up (opened through the actors).
void wait_for_link(EngineClient& decode, int seconds = 5) {
  for (int i = 0; i < seconds * 100; ++i) {
    const auto peers = admin_view(decode).at("kv_transfer").at("peers");
    if (!peers.empty() && peers.at(0).at("device_link").get<bool>()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL("the device link did not come up");
}

struct PdEngines {
  std::shared_ptr<KvLinkFactory> links;
  int port = free_port();
  std::unique_ptr<EngineClient> prefill, decode;
  PdEngines(std::shared_ptr<KvLinkFactory> l, int num_kv_blocks) : links(std::move(l)) {
    EngineConfig p = stories_config(num_kv_blocks);
    p.role = Role::Prefill, p.kv_port = port, p.kv_link_factory = links, p.kv_transfer_timeout_s = 2;
    prefill = EngineClient::start(p);
    decode = start_decode(num_kv_blocks);
  }
  std::unique_ptr<EngineClient> start_decode(int num_kv_blocks) const {
    EngineConfig d = stories_config(num_kv_blocks);
    d.role = Role::Decode, d.prefill_peers = {"127.0.0.1:" + std::to_string(port)}, d.kv_link_factory = links;
    d.kv_transfer_timeout_s = 2;
    return EngineClient::start(d);
  }
};

}  // namespace

TEST_CASE("pd actors: KV over a device link gives colocated serving's tokens, and a broken link recomputes",
          "[actors][pd][links]") {
  auto colocated = EngineClient::start(stories_config(64));
  // Eight requests named `prefix`0..7; the second asks for n = 3 (one prefill, one transfer, the split on the decode
  // side).
  const auto specs = [&](const std::string& prefix) {
    std::vector<EngineRequestSpec> s = specs_for(colocated->tokenizer(), 8, prefix);
    s[1].child_req_ids = {prefix + "1", prefix + "1.1", prefix + "1.2"};
    s[1].params.n = 3;
    return s;
  };
  const auto renamed = [](const std::map<std::string, std::vector<int>>& by_id, const std::string& prefix) {
    std::map<std::string, std::vector<int>> out;
    for (const auto& [id, tokens] : by_id) out[prefix + id.substr(1)] = tokens;
    return out;
  };
  const auto expected = run(*colocated, specs("c"));
  REQUIRE(expected.size() == 10);

  auto hub = std::make_shared<test::HostKvLinkHub>();
  PdEngines pd(hub, 64);
  wait_for_link(*pd.decode);
  REQUIRE(run(*pd.decode, specs("l")) == renamed(expected, "l"));
  REQUIRE(hub->transfers() == 8);  // one per prompt, n = 3 included
  for (EngineClient* e : {pd.prefill.get(), pd.decode.get()}) require_idle(*e);
  const std::string d = metrics_of(*pd.decode), p = metrics_of(*pd.prefill);
  REQUIRE(metric(d, "parley:prefill_tokens_computed_total") == 0);
  REQUIRE(metric(d, "parley:kv_blocks_transferred_total") == metric(p, "parley:kv_blocks_transferred_total"));
  REQUIRE(metric(d, "parley:kv_transfer_failures_total") == 0);
  REQUIRE(metric(d, "parley:kv_transfer_latency_seconds_count") == 8);

  // A transfer's latency ends when its KV is in, not when its header is: with every transfer taking 300 ms
  // on the link, no sample is under that.
  hub->set_delay(std::chrono::milliseconds(300));
  REQUIRE(run(*pd.decode, specs("w")) == renamed(expected, "w"));
  hub->set_delay(std::chrono::milliseconds(0));
  REQUIRE(hub->transfers() == 16);
  const std::string dw = metrics_of(*pd.decode);
  REQUIRE(metric(dw, "parley:kv_transfer_latency_seconds_count") == 16);
  REQUIRE(metric(dw, "parley:kv_transfer_latency_seconds_sum") - metric(d, "parley:kv_transfer_latency_seconds_sum") >=
          8 * 0.3);

  // Aborts while the KV is on its way: the decode side still receives every KV the prefill side sends (the
  // link pairs transfers in order), drops the unwanted ones, and the others land where they belong.
  auto sink = std::make_shared<CollectingSink>();
  pd.decode->submit(specs("a"), sink);
  pd.decode->abort({"a0", "a2", "a4", "a6"});
  REQUIRE(sink->wait(10));
  for (const auto& [id, tokens] : renamed(expected, "a"))
    if (id != "a0" && id != "a2" && id != "a4" && id != "a6") REQUIRE(sink->total.at(id).token_ids == tokens);
  for (EngineClient* e : {pd.prefill.get(), pd.decode.get()}) require_idle(*e);
  REQUIRE(hub->transfers() == 24);
  REQUIRE(metric(metrics_of(*pd.decode), "parley:prefill_tokens_computed_total") == 0);
  REQUIRE(run(*pd.decode, specs("z")) == renamed(expected, "z"));
  REQUIRE(hub->transfers() == 32);

  // A second decode instance on the same prefill instance: a link each, both at once, nothing mixed up.
  auto decode2 = pd.start_decode(64);
  wait_for_link(*decode2);
  auto both = std::async(std::launch::async, [&] { return run(*decode2, specs("s")); });
  REQUIRE(run(*pd.decode, specs("y")) == renamed(expected, "y"));
  REQUIRE(both.get() == renamed(expected, "s"));
  REQUIRE(hub->transfers() == 48);
  for (EngineClient* e : {pd.prefill.get(), pd.decode.get(), decode2.get()}) require_idle(*e);
  REQUIRE(hub->open_ends() == 4);
  decode2.reset();
  // The prefill instance closes its end of the departed instance's link (it would idle, holding a communicator).
  for (int i = 0; i < 500 && hub->open_ends() > 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(hub->open_ends() == 2);
  REQUIRE(admin_view(*pd.prefill).at("kv_transfer").at("links_to_decode") == 1);

  // A NIC failure: the next transfers fail on both ends and the decode side prefills those itself; later
  // KV goes over TCP while no link opens. Every request still gets its tokens.
  hub->refuse_opens(true);
  hub->break_all("the link went dark");
  REQUIRE(run(*pd.decode, specs("b")) == renamed(expected, "b"));
  REQUIRE_FALSE(admin_view(*pd.decode).at("kv_transfer").at("peers").at(0).at("device_link").get<bool>());
  REQUIRE(hub->transfers() == 48);
  for (EngineClient* e : {pd.prefill.get(), pd.decode.get()}) require_idle(*e);
  const std::string d_after_break = metrics_of(*pd.decode);
  const double computed = metric(d_after_break, "parley:prefill_tokens_computed_total");
  REQUIRE(computed > 0);
  REQUIRE(run(*pd.decode, specs("t")) == renamed(expected, "t"));
  REQUIRE(metric(metrics_of(*pd.decode), "parley:prefill_tokens_computed_total") ==
          computed);  // all prefilled remotely
  REQUIRE(hub->transfers() == 48);
  for (EngineClient* e : {pd.prefill.get(), pd.decode.get()}) require_idle(*e);

  // The NIC is back: the decode instance opens a new link (one attempt per transfer timeout), and KV goes on it again.
  hub->refuse_opens(false);
  wait_for_link(*pd.decode, 10);
  REQUIRE(run(*pd.decode, specs("u")) == renamed(expected, "u"));
  REQUIRE(hub->transfers() == 56);
  REQUIRE(metric(metrics_of(*pd.decode), "parley:prefill_tokens_computed_total") == computed);
  REQUIRE(admin_view(*pd.prefill).at("kv_transfer").at("links_to_decode") == 1);
  for (EngineClient* e : {pd.prefill.get(), pd.decode.get()}) require_idle(*e);

  // The link fails as the prefill side posts a send: that KV goes over TCP instead (no header left for it, so
  // nothing is recomputed), and both ends close the link; the decode instance opens a new one a timeout later.
  const double blocks_before = metric(metrics_of(*pd.decode), "parley:kv_blocks_transferred_total");
  hub->fail_posts(true);
  REQUIRE(run(*pd.decode, specs("v")) == renamed(expected, "v"));
  REQUIRE(hub->transfers() == 56);
  const std::string dv = metrics_of(*pd.decode);
  REQUIRE(metric(dv, "parley:prefill_tokens_computed_total") == computed);
  REQUIRE(metric(dv, "parley:kv_transfer_failures_total") ==
          metric(d_after_break, "parley:kv_transfer_failures_total"));
  REQUIRE(metric(dv, "parley:kv_blocks_transferred_total") > blocks_before);
  for (int i = 0; i < 100 && hub->open_ends() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(hub->open_ends() == 0);  // the decode end too: the prefill instance told it
  REQUIRE_FALSE(admin_view(*pd.decode).at("kv_transfer").at("peers").at(0).at("device_link").get<bool>());
  hub->fail_posts(false);
  wait_for_link(*pd.decode, 10);
  REQUIRE(run(*pd.decode, specs("x")) == renamed(expected, "x"));
  REQUIRE(hub->transfers() == 64);
  REQUIRE(metric(metrics_of(*pd.decode), "parley:prefill_tokens_computed_total") == computed);
  for (EngineClient* e : {pd.prefill.get(), pd.decode.get()}) require_idle(*e);
}

}  // namespace parley
