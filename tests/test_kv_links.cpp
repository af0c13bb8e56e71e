// Device links for KV transfers (engine/kv_links.hpp) over the in-process stand-in for NCCL: blocks arrive
// bit-identical in other block ids, on the CPU and on the CUDA model's host emulation (device staging);
// transfers pair in posting order; deadlines, a peer that never joins and size mismatches break the link
// and fail everything on it, and nothing reaches blocks without land().
#include <catch2/catch.hpp>

#include "engine/kv_links.hpp"
#include "engine_core_runs.hpp"
#include "host_device_ops.hpp"
#include "host_kv_link.hpp"
#include "model/cuda/device_llama.hpp"

using namespace parley;
using Kind = KvLinkEvent::Kind;

namespace {

constexpr double kTimeout = 5;

std::vector<uint64_t> tags_of(const std::vector<KvLinkEvent>& events, Kind kind) {
  std::vector<uint64_t> tags;
  for (const KvLinkEvent& e : events)
    if (e.kind == kind) tags.push_back(e.tag);
  return tags;
}

// Two ends of one link, opened and up.
struct LinkedPair {
  test::HostKvLinkHub hub;
  KvLinks a, b;
  LinkedPair(DeviceModel& da, DeviceModel& db)
      : a(da, std::shared_ptr<KvLinkFactory>(&hub, [](KvLinkFactory*) {}), kTimeout),
        b(db, std::shared_ptr<KvLinkFactory>(&hub, [](KvLinkFactory*) {}), kTimeout) {
    const std::string id = b.new_id();
    b.open("to-a", id, 1, 100, 0);
    a.open("to-b", id, 0, 200, 0);
    REQUIRE(tags_of(a.poll(0), Kind::Up) == std::vector<uint64_t>{200});
    REQUIRE(tags_of(b.poll(0), Kind::Up) == std::vector<uint64_t>{100});
  }
};

// Two CPU models of 8 blocks joined by one link, up.
struct CpuLinkedPair {
  test::Loaded m{test::shared_model("stories260K.bin"), test::shared_model("tok512.bin")};
  CpuDeviceModel prefill{m.model, 8, 16}, decode{m.model, 8, 16};
  LinkedPair link{prefill, decode};
  const int64_t per_block = int64_t(prefill.export_blocks(std::vector<int>{0}).size()) / 4;  // words, the link's unit
};

// `ops`, if given, gets the emulated device (to fill it up).
std::unique_ptr<DeviceModel> host_cuda_model(const test::Loaded& m, int num_blocks, test::HostOps** ops = nullptr) {
  SchedulerConfig c = test::model_scheduler_config(m, num_blocks);
  cuda::DeviceLlamaOptions o = test::device_options(c, 0);
  o.staging_bytes = int64_t(256) << 20;  // as a PD instance keeps
  auto owned = std::make_unique<test::HostOps>();
  if (ops) *ops = owned.get();
  return std::make_unique<cuda::DeviceLlama<test::HostOps>>(std::move(owned), m.model.config(), m.file.weights, o);
}

// With the device full: takes every staging buffer the model keeps pooled, so the next staging must allocate.
std::vector<std::unique_ptr<KvStaging>> take_pooled_staging(DeviceModel& d) {
  std::vector<std::unique_ptr<KvStaging>> taken;
  for (;;) try {
      taken.push_back(d.new_staging(1));
    } catch (const std::runtime_error&) {
      return taken;
    }
}

}  // namespace

TEST_CASE("kv links: sent blocks land bit-identical in other block ids, in posting order", "[pd][links]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  for (const bool device_staging : {false, true}) {
    CAPTURE(device_staging);
    std::unique_ptr<DeviceModel> prefill =
        device_staging ? host_cuda_model(m, 12) : std::make_unique<CpuDeviceModel>(m.model, 12, 16);
    std::unique_ptr<DeviceModel> decode =
        device_staging ? host_cuda_model(m, 12) : std::make_unique<CpuDeviceModel>(m.model, 12, 16);
    test::fill_random_kv(*prefill, 1), test::fill_random_kv(*decode, 2);
    LinkedPair link(*prefill, *decode);
    const std::vector<std::vector<int>> sent = {{3, 1, 4}, {7}, {0, 11}};
    const std::vector<std::vector<int>> into = {{0, 5, 2}, {9}, {6, 8}};
    const int64_t per_block = int64_t(prefill->export_blocks(std::vector<int>{0}).size()) / 4;
    const std::vector<uint8_t> untouched = decode->export_blocks(std::vector<int>{0, 5, 2, 9, 6, 8});
    const std::vector<uint8_t> untouched_9 = decode->export_blocks(std::vector<int>{9});
    for (size_t i = 0; i < sent.size(); ++i) {
      link.b.recv("to-a", 10 + i, per_block * int64_t(sent[i].size()), 1);
      link.a.send("to-b", 20 + i, sent[i], 1);
    }
    const std::vector<uint8_t> sent_0 = prefill->export_blocks(sent[0]);
    test::fill_random_kv(*prefill, 3);  // sends were staged: the blocks are free again at once
    REQUIRE(tags_of(link.a.poll(1), Kind::Done) == std::vector<uint64_t>{20, 21, 22});
    REQUIRE(tags_of(link.b.poll(1), Kind::Done) == std::vector<uint64_t>{10, 11, 12});
    REQUIRE(decode->export_blocks(std::vector<int>{0, 5, 2, 9, 6, 8}) == untouched);  // nothing lands unasked
    link.b.land(10, into[0]);
    link.b.drop(11);  // its request went away
    link.b.land(12, into[2]);
    REQUIRE(decode->export_blocks(into[0]) == sent_0);
    REQUIRE(decode->export_blocks(std::vector<int>{9}) == untouched_9);
    REQUIRE_THROWS_AS(link.b.land(11, into[1]), std::invalid_argument);
    REQUIRE(link.hub.transfers() == 3);
    REQUIRE_FALSE(link.a.busy());
    REQUIRE_FALSE(link.b.busy());
  }
}

TEST_CASE("kv links: a transfer past its deadline breaks the link and fails everything on it", "[pd][links]") {
  CpuLinkedPair cpu;
  LinkedPair& link = cpu.link;
  const int64_t per_block = cpu.per_block;
  link.b.recv("to-a", 1, per_block, 0);
  link.b.recv("to-a", 2, per_block * 2, 0);
  REQUIRE(link.b.busy());
  REQUIRE(link.b.poll(kTimeout - 0.5).empty());  // the peer is slow, not yet late
  const std::vector<KvLinkEvent> late = link.b.poll(kTimeout + 0.5);
  REQUIRE(tags_of(late, Kind::Failed) == std::vector<uint64_t>{1, 2});
  REQUIRE_THAT(late.at(0).why, Catch::Contains("took over 5 s"));
  REQUIRE(link.b.num_links() == 0);
  REQUIRE_THROWS_AS(link.b.recv("to-a", 3, per_block, 6), KvLinkError);
  // The other end's send then finds no receiver and runs into its own deadline.
  link.a.send("to-b", 4, std::vector<int>{0}, 6);
  REQUIRE(link.a.poll(7).empty());
  REQUIRE(tags_of(link.a.poll(6 + kTimeout), Kind::Failed) == std::vector<uint64_t>{4});
}

TEST_CASE("kv links: closing or reopening a link fails what is in flight on it", "[pd][links]") {
  CpuLinkedPair cpu;
  LinkedPair& link = cpu.link;
  const int64_t per_block = cpu.per_block;
  link.b.recv("to-a", 1, per_block, 0);
  link.b.close("to-a");
  const std::vector<KvLinkEvent> closed = link.b.poll(0);
  REQUIRE(tags_of(closed, Kind::Failed) == std::vector<uint64_t>{1});
  REQUIRE_THAT(closed.at(0).why, Catch::Contains("was closed"));
  REQUIRE_THROWS_AS(link.b.recv("to-a", 2, per_block, 0), KvLinkError);
  // Reopening under a name in use aborts the old link first: its send fails, the new link starts opening.
  link.a.send("to-b", 3, std::vector<int>{0}, 0);
  link.a.open("to-b", link.hub.new_id(), 0, 4, 0);
  const std::vector<KvLinkEvent> reopened = link.a.poll(0);
  REQUIRE(tags_of(reopened, Kind::Failed) == std::vector<uint64_t>{3});
  REQUIRE_THAT(reopened.at(0).why, Catch::Contains("was opened again"));
  REQUIRE(link.a.num_links() == 1);
  REQUIRE(link.a.busy());  // the new link waits for its peer
  REQUIRE(link.hub.transfers() == 0);
}

TEST_CASE("kv links: a device error while polling breaks that link and fails what is on it (nothing escapes)",
          "[pd][links]") {
  CpuLinkedPair cpu;
  LinkedPair& link = cpu.link;
  const int64_t per_block = cpu.per_block;
  link.b.recv("to-a", 1, per_block, 0);
  link.hub.device_error("cudaEventQuery: an illegal memory access was encountered");
  std::vector<KvLinkEvent> events;
  REQUIRE_NOTHROW(events = link.b.poll(0));
  REQUIRE(tags_of(events, Kind::Failed) == std::vector<uint64_t>{1});
  REQUIRE_THAT(events.at(0).why, Catch::Contains("illegal memory access"));
  REQUIRE(link.b.num_links() == 0);
  REQUIRE(link.hub.open_ends() == 1);  // this end aborted; the other has not noticed yet
}

TEST_CASE("kv links: a peer that never joins, or sizes posted out of order, break the link", "[pd][links]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  CpuDeviceModel prefill(m.model, 8, 16), decode(m.model, 8, 16);
  test::HostKvLinkHub hub;
  KvLinks lonely(decode, std::shared_ptr<KvLinkFactory>(&hub, [](KvLinkFactory*) {}), kTimeout);
  lonely.open("to-a", lonely.new_id(), 1, 7, 0);
  REQUIRE(lonely.busy());
  REQUIRE(lonely.poll(1).empty());
  const std::vector<KvLinkEvent> gone = lonely.poll(kTimeout);
  REQUIRE(tags_of(gone, Kind::Failed) == std::vector<uint64_t>{7});
  REQUIRE_THAT(gone.at(0).why, Catch::Contains("did not join"));

  // The receiver expects 2 blocks then 1; the sender sends 1 then 2: the first pair does not match.
  LinkedPair link(prefill, decode);
  const int64_t per_block = int64_t(prefill.export_blocks(std::vector<int>{0}).size()) / 4;
  link.b.recv("to-a", 1, per_block * 2, 0), link.b.recv("to-a", 2, per_block, 0);
  link.a.send("to-b", 3, std::vector<int>{0}, 0), link.a.send("to-b", 4, std::vector<int>{1, 2}, 0);
  REQUIRE(tags_of(link.a.poll(0), Kind::Failed) == std::vector<uint64_t>{3, 4});
  REQUIRE(tags_of(link.b.poll(0), Kind::Failed) == std::vector<uint64_t>{1, 2});
  REQUIRE(link.hub.transfers() == 0);
  REQUIRE_THROWS_AS(link.a.send("to-b", 5, std::vector<int>{0}, 0), KvLinkError);
}

TEST_CASE("kv links: the CUDA model reuses its staging buffers (freeing device memory waits for the device)",
          "[pd][links]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  std::unique_ptr<DeviceModel> d = host_cuda_model(m, 12);
  test::fill_random_kv(*d, 4);
  const float* first = nullptr;
  {
    std::unique_ptr<KvStaging> a = d->stage_blocks(std::vector<int>{1, 2});
    first = a->data();
    std::unique_ptr<KvStaging> b = d->stage_blocks(std::vector<int>{3});  // both in use: two buffers
    REQUIRE(b->data() != first);
  }
  std::unique_ptr<KvStaging> small = d->stage_blocks(std::vector<int>{5});  // the one-block buffer fits best
  REQUIRE(small->data() != first);
  std::unique_ptr<KvStaging> again = d->stage_blocks(std::vector<int>{6, 7});
  REQUIRE(again->data() == first);
  REQUIRE(again->size() * 4 == 2 * int64_t(d->export_blocks(std::vector<int>{0}).size()));
  const auto* staged = reinterpret_cast<const uint8_t*>(again->data());
  REQUIRE(std::vector<uint8_t>(staged, staged + again->size() * 4) == d->export_blocks(std::vector<int>{6, 7}));
}

TEST_CASE(
    "kv links: KV that cannot be staged is not sent (the link stays), and a receive waits for staging memory in "
    "posting order",
    "[pd][links]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  test::HostOps *prefill_ops = nullptr, *decode_ops = nullptr;
  std::unique_ptr<DeviceModel> prefill = host_cuda_model(m, 12, &prefill_ops),
                               decode = host_cuda_model(m, 12, &decode_ops);
  test::fill_random_kv(*prefill, 5), test::fill_random_kv(*decode, 6);
  LinkedPair link(*prefill, *decode);
  const int64_t per_block = int64_t(prefill->export_blocks(std::vector<int>{0}).size()) / 4;

  // The prefill device is full: the send throws before anything is posted, and the link pairs the next one right.
  prefill_ops->leave_free(0);
  std::vector<std::unique_ptr<KvStaging>> pooled = take_pooled_staging(*prefill);
  REQUIRE_THROWS_AS(link.a.send("to-b", 1, std::vector<int>{3}, 0), KvStagingError);
  REQUIRE(link.a.num_links() == 1);
  REQUIRE(link.a.poll(0).empty());
  pooled.clear();
  prefill_ops->leave_free(int64_t(64) << 20);
  link.b.recv("to-a", 10, per_block * 2, 0);
  link.a.send("to-b", 2, std::vector<int>{3, 1}, 0);
  REQUIRE(tags_of(link.a.poll(0), Kind::Done) == std::vector<uint64_t>{2});
  REQUIRE(tags_of(link.b.poll(0), Kind::Done) == std::vector<uint64_t>{10});
  link.b.land(10, std::vector<int>{5, 6});
  REQUIRE(decode->export_blocks(std::vector<int>{5, 6}) == prefill->export_blocks(std::vector<int>{3, 1}));
  REQUIRE(link.hub.transfers() == 1);

  // The decode device is full: a receive it cannot stage waits (and the one after it, in posting order) until
  // landed KV frees memory; the link stays, and each KV lands where it belongs.
  link.b.recv("to-a", 11, per_block, 0);
  decode_ops->leave_free(0);
  pooled = take_pooled_staging(*decode);
  link.b.recv("to-a", 12, per_block * 3, 0);
  link.b.recv("to-a", 13, per_block, 0);
  link.a.send("to-b", 3, std::vector<int>{7}, 0);
  link.a.send("to-b", 4, std::vector<int>{8, 9, 10}, 0);
  link.a.send("to-b", 5, std::vector<int>{11}, 0);
  REQUIRE(tags_of(link.b.poll(1), Kind::Done) == std::vector<uint64_t>{11});
  REQUIRE(tags_of(link.a.poll(1), Kind::Done) == std::vector<uint64_t>{3});
  REQUIRE(link.b.poll(2).empty());  // 12 and 13 wait for memory
  REQUIRE(link.b.busy());
  link.b.land(11, std::vector<int>{0});
  pooled.clear();  // KV landed elsewhere frees staging
  REQUIRE(tags_of(link.b.poll(2), Kind::Done) == std::vector<uint64_t>{12, 13});
  link.b.land(12, std::vector<int>{1, 2, 3});
  link.b.land(13, std::vector<int>{4});
  REQUIRE(decode->export_blocks(std::vector<int>{0, 1, 2, 3, 4}) ==
          prefill->export_blocks(std::vector<int>{7, 8, 9, 10, 11}));
  REQUIRE(tags_of(link.a.poll(2), Kind::Done) == std::vector<uint64_t>{4, 5});
  REQUIRE(link.hub.transfers() == 4);

  // Memory that never frees: the waiting receive runs into its deadline, which breaks the link.
  pooled = take_pooled_staging(*decode);
  link.b.recv("to-a", 14, per_block * 2, 3);
  REQUIRE(link.b.num_links() == 1);
  const std::vector<KvLinkEvent> late = link.b.poll(3 + kTimeout + 0.5);
  REQUIRE(tags_of(late, Kind::Failed) == std::vector<uint64_t>{14});
  REQUIRE_THAT(late.at(0).why, Catch::Contains("took over"));
  REQUIRE(link.b.num_links() == 0);
  REQUIRE_FALSE(link.b.busy());
}

TEST_CASE("kv links: on a full device the staging pool frees the buffers it keeps before it gives up", "[pd][links]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  test::HostOps* ops = nullptr;
  std::unique_ptr<DeviceModel> d = host_cuda_model(m, 12, &ops);
  const int64_t per_block = int64_t(d->export_blocks(std::vector<int>{0}).size()) / 4;  // its staging is kept
  {
    std::unique_ptr<KvStaging> a = d->new_staging(per_block),
                               b = d->new_staging(per_block);  // a second one-block buffer
  }
  ops->leave_free(0);
  std::unique_ptr<KvStaging> two = d->new_staging(per_block * 2);  // neither kept buffer holds it: freed, then it fits
  REQUIRE(two->size() == per_block * 2);
  REQUIRE_THROWS_AS(d->new_staging(per_block), std::runtime_error);  // nothing kept, nothing free
}
