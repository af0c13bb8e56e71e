// The worker's half of the KV connector (engine/kv_connector_worker.hpp) driven without actors: KV sent inline or on
// a device link (the in-process stand-in for NCCL) lands bit-identical in the decode worker's blocks only when
// asked; get_finished names the requests whose sends and receives ended; each operation's callback hears once;
// KV a link cannot stage goes inline; a broken link fails what is on it.
#include <catch2/catch.hpp>

#include "engine/kv_connector_worker.hpp"
#include "engine_core_runs.hpp"
#include "host_kv_link.hpp"

using namespace parley;

namespace {

constexpr double kTimeout = 5;

// What a callback heard, and how often.
struct Heard {
  int times = 0;
  std::string error;
  KvConnectorWorker::Done done() {
    return [this](const std::string& e) { ++times, error = e; };
  }
};

// A prefill and a decode worker's connectors over CPU models of 8 blocks, with device links when `linked`.
struct ConnectorPair {
  test::Loaded m{test::shared_model("stories260K.bin"), test::shared_model("tok512.bin")};
  CpuDeviceModel prefill_device{m.model, 8, 16}, decode_device{m.model, 8, 16};
  test::HostKvLinkHub hub;
  KvConnectorWorker prefill, decode;
  const int64_t block_bytes = int64_t(prefill_device.export_blocks(std::vector<int>{0}).size());

  explicit ConnectorPair(bool linked)
      : prefill(make_kv_transfer_backends(prefill_device, linked ? hub_ptr() : nullptr, kTimeout)),
        decode(make_kv_transfer_backends(decode_device, linked ? hub_ptr() : nullptr, kTimeout)) {
    test::fill_random_kv(prefill_device, 1), test::fill_random_kv(decode_device, 2);
  }
  std::shared_ptr<KvLinkFactory> hub_ptr() {
    return {&hub, [](KvLinkFactory*) {}};
  }

  // Opens "link" at both ends (decode rank 1, prefill rank 0), as the KV transfer actors have the workers do.
  void open_link() {
    Heard decode_opened, prefill_opened;
    const std::string id = decode.new_link_id();
    decode.open_link("link", id, 1, 0, decode_opened.done());
    prefill.open_link("link", id, 0, 0, prefill_opened.done());
    prefill.get_finished(0), decode.get_finished(0);
    REQUIRE(decode_opened.times == 1);
    REQUIRE(decode_opened.error.empty());
    REQUIRE(prefill_opened.times == 1);
    REQUIRE_FALSE(decode.busy());
  }
};

using Ids = std::vector<std::string>;

}  // namespace

TEST_CASE("kv connector worker: KV sent inline lands bit-identical in other blocks, and only when asked",
          "[pd][connector]") {
  ConnectorPair pair(false);
  REQUIRE(pair.prefill.link_transport().empty());
  const std::vector<uint8_t> sent = pair.prefill_device.export_blocks(std::vector<int>{3, 1});
  KvConnectorWorker::Started started = pair.prefill.start_send("r1", "", std::vector<int>{3, 1}, 0);
  REQUIRE(started.link.empty());
  REQUIRE(started.inline_kv == sent);
  REQUIRE(pair.prefill.get_finished(0).sending == Ids{"r1"});

  const std::vector<uint8_t> untouched = pair.decode_device.export_blocks(std::vector<int>{5, 0});
  Heard received;
  pair.decode.start_recv("r1", "", 2 * pair.block_bytes, started.inline_kv, 0, received.done());
  REQUIRE(received.times == 1);  // inline KV is in at once
  REQUIRE(received.error.empty());
  REQUIRE(pair.decode.get_finished(0).receiving == Ids{"r1"});
  REQUIRE(pair.decode_device.export_blocks(std::vector<int>{5, 0}) == untouched);  // nothing lands unasked
  pair.decode.land("r1", std::vector<int>{5, 0});
  REQUIRE(pair.decode_device.export_blocks(std::vector<int>{5, 0}) == sent);
  REQUIRE_THROWS_AS(pair.decode.land("r1", std::vector<int>{5, 0}), std::invalid_argument);  // landed once
  REQUIRE_FALSE(pair.decode.busy());
}

TEST_CASE("kv connector worker: inline KV of another size than its header's is refused", "[pd][connector]") {
  ConnectorPair pair(false);
  Heard received;
  REQUIRE_THROWS_AS(pair.decode.start_recv("r1", "", pair.block_bytes, std::vector<uint8_t>(8), 0, received.done()),
                    std::invalid_argument);
  REQUIRE(received.times == 0);
  REQUIRE(pair.decode.get_finished(0).receiving.empty());
}

TEST_CASE("kv connector worker: without a link backend, link operations throw", "[pd][connector]") {
  ConnectorPair pair(false);
  REQUIRE_THROWS_WITH(pair.decode.new_link_id(), Catch::Contains("no device link transport"));
  REQUIRE_THROWS_AS(pair.prefill.start_send("r1", "link", std::vector<int>{0}, 0), std::logic_error);
}

TEST_CASE("kv connector worker: KV on a device link arrives in posting order, and get_finished names each request once",
          "[pd][connector]") {
  ConnectorPair pair(true);
  REQUIRE(pair.decode.link_transport() == pair.hub.transport());
  pair.open_link();
  const std::vector<uint8_t> sent_a = pair.prefill_device.export_blocks(std::vector<int>{2});
  const std::vector<uint8_t> sent_b = pair.prefill_device.export_blocks(std::vector<int>{4, 6});
  Heard got_a, got_b, sent_early, sent_late;
  pair.decode.start_recv("a", "link", pair.block_bytes, {}, 1, got_a.done());
  pair.decode.start_recv("b", "link", 2 * pair.block_bytes, {}, 1, got_b.done());
  REQUIRE(pair.prefill.start_send("a", "link", std::vector<int>{2}, 1).link == "link");
  pair.prefill.when_sent("a", sent_early.done());  // asked before it finished
  const KvConnectorWorker::Started b = pair.prefill.start_send("b", "link", std::vector<int>{4, 6}, 1);
  REQUIRE(b.link == "link");
  REQUIRE(b.inline_kv.empty());                  // only the header travels
  test::fill_random_kv(pair.prefill_device, 3);  // sends were staged: the blocks are free at once

  REQUIRE(pair.prefill.get_finished(1).sending == Ids{"a", "b"});
  REQUIRE(sent_early.times == 1);
  pair.prefill.when_sent("b", sent_late.done());  // asked after it finished: heard at once
  REQUIRE(sent_late.times == 1);
  REQUIRE(sent_late.error.empty());
  REQUIRE(pair.decode.get_finished(1).receiving == Ids{"a", "b"});
  REQUIRE(pair.decode.get_finished(1).receiving.empty());
  REQUIRE(got_a.times == 1);
  REQUIRE(got_b.times == 1);
  pair.decode.land("b", std::vector<int>{7, 0});
  pair.decode.drop("a");  // its request went away
  REQUIRE(pair.decode_device.export_blocks(std::vector<int>{7, 0}) == sent_b);
  REQUIRE_THROWS_AS(pair.decode.land("a", std::vector<int>{1}), std::invalid_argument);
  REQUIRE(pair.hub.transfers() == 2);
  REQUIRE_FALSE(pair.prefill.busy());
}

TEST_CASE("kv connector worker: a broken link fails its receives and sends, and their callbacks hear why",
          "[pd][connector]") {
  ConnectorPair pair(true);
  pair.open_link();
  Heard received, sent, unknown;
  pair.decode.start_recv("r1", "link", pair.block_bytes, {}, 0, received.done());
  pair.prefill.start_send("r2", "link", std::vector<int>{0}, 0);
  pair.prefill.when_sent("r2", sent.done());
  pair.decode.close_link("link");
  REQUIRE(pair.decode.busy());
  REQUIRE(pair.decode.get_finished(0).receiving == Ids{"r1"});
  REQUIRE(received.times == 1);
  REQUIRE_THAT(received.error, Catch::Contains("was closed"));
  REQUIRE_THROWS_AS(pair.decode.land("r1", std::vector<int>{0}), std::invalid_argument);  // nothing to land
  REQUIRE_THROWS_AS(pair.decode.start_recv("r3", "link", pair.block_bytes, {}, 0, nullptr), KvLinkError);
  pair.prefill.close_link("link");
  REQUIRE(pair.prefill.get_finished(0).sending == Ids{"r2"});
  REQUIRE(sent.times == 1);
  REQUIRE_THAT(sent.error, Catch::Contains("was closed"));
  pair.prefill.when_sent("r9", unknown.done());
  REQUIRE_THAT(unknown.error, Catch::Contains("no KV send for request r9"));
}

namespace {

// A link backend whose staging memory is always short: every send throws KvStagingError (nothing posted).
class NoStagingBackend final : public KvTransferBackend {
 public:
  std::string name() const override { return "no-staging"; }
  bool has_links() const override { return true; }
  std::vector<uint8_t> start_send(const std::string&, const std::string&, std::span<const int>, double) override {
    throw KvStagingError("no device memory");
  }
  void start_recv(const std::string&, const std::string&, int64_t, std::vector<uint8_t>, double) override {}
  void land(const std::string&, std::span<const int>) override {}
  void drop(const std::string&) override {}
  std::vector<KvBackendEvent> poll(double) override { return {}; }
  bool busy() const override { return false; }
};

}  // namespace

TEST_CASE("kv connector worker: KV the link cannot stage goes inline instead (one new backend is one class)",
          "[pd][connector]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  CpuDeviceModel device(m.model, 8, 16);
  test::fill_random_kv(device, 5);
  std::vector<std::unique_ptr<KvTransferBackend>> backends = make_kv_transfer_backends(device, nullptr, kTimeout);
  backends.push_back(std::make_unique<NoStagingBackend>());
  KvConnectorWorker prefill(std::move(backends));
  REQUIRE(prefill.link_transport() == "no-staging");
  const KvConnectorWorker::Started started = prefill.start_send("r1", "link", std::vector<int>{1}, 0);
  REQUIRE(started.link.empty());
  REQUIRE(started.inline_kv == device.export_blocks(std::vector<int>{1}));
  REQUIRE(prefill.get_finished(0).sending == Ids{"r1"});
}
