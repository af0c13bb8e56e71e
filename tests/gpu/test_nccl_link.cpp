// NCCL device links for KV (model/cuda/nccl_link.cpp) on real GPUs: blocks sent from one GPU land
// bit-identical in other block ids on another; a link whose peer never joins times out and aborts cleanly
// (the one check a single GPU allows: this test never opens both ends on one device).
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <thread>

#include "../engine_core_runs.hpp"
#include "engine/kv_links.hpp"
#include "model/cuda/cuda_model.hpp"

using namespace parley;
using Kind = KvLinkEvent::Kind;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::unique_ptr<DeviceModel> model_on(const test::Loaded& m, const SchedulerConfig& c, int device) {
  cuda::CudaModelOptions o;
  o.device = device;
  o.dtype = "float32";
  o.model = test::device_options(c, 0);
  return cuda::make_model(m.file.config, m.file.weights, o);
}

// Polls links, keeping every event, until the one for a tag shows up (or 20 s pass).
struct Events {
  std::vector<KvLinks*> links;
  std::map<uint64_t, KvLinkEvent> seen;
  KvLinkEvent wait_for(uint64_t tag) {
    for (const double give_up = now() + 20; !seen.count(tag) && now() < give_up;) {
      for (KvLinks* l : links)
        for (const KvLinkEvent& e : l->poll(now())) seen.emplace(e.tag, e);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!seen.count(tag)) FAIL("no event for tag " << tag);
    return seen.at(tag);
  }
};

}  // namespace

TEST_CASE("NCCL links: KV from one GPU lands bit-identical on another; a peer that never joins times out", "[gpu]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const SchedulerConfig c = test::model_scheduler_config(m, 16);
  {
    auto factory = cuda::nccl_link_factory(0);
    auto model = model_on(m, c, 0);
    KvLinks lonely(*model, factory, 2.0);
    lonely.open("nobody", factory->new_id(), 0, 1, now());
    const KvLinkEvent e = Events{{&lonely}, {}}.wait_for(1);
    REQUIRE(e.kind == Kind::Failed);
    REQUIRE_THAT(e.why, Catch::Contains("did not join"));
    REQUIRE(lonely.num_links() == 0);
  }
  std::string why;
  if (cuda::device_count(&why) < 2) {
    WARN("one CUDA device: the GPU-to-GPU transfer needs two");
    return;
  }
  auto sender = model_on(m, c, 0), receiver = model_on(m, c, 1);
  const std::vector<int> blocks{3, 1, 4}, into{0, 9, 2};
  const int64_t bytes = int64_t(sender->export_blocks(blocks).size());
  const int64_t floats = bytes / 4;  // the link moves 4-byte words
  const std::vector<float> noise = test::random_floats(size_t(floats), 7);
  sender->import_blocks(blocks, {reinterpret_cast<const uint8_t*>(noise.data()), size_t(bytes)});
  KvLinks a(*sender, cuda::nccl_link_factory(0), 20), b(*receiver, cuda::nccl_link_factory(1), 20);
  const std::string id = a.new_id();
  a.open("to-b", id, 0, 1, now());
  b.open("to-a", id, 1, 2, now());
  Events events{{&a, &b}, {}};
  REQUIRE(events.wait_for(1).kind == Kind::Up);
  REQUIRE(events.wait_for(2).kind == Kind::Up);
  b.recv("to-a", 3, floats, now());
  a.send("to-b", 4, blocks, now());
  REQUIRE(events.wait_for(3).kind == Kind::Done);
  REQUIRE(events.wait_for(4).kind == Kind::Done);
  b.land(3, into);
  REQUIRE(receiver->export_blocks(into) == sender->export_blocks(blocks));
}
