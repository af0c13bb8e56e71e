// The scheduler's half of the KV connector (engine/kv_connector_scheduler.hpp), without actors or a model:
// routes, landings and their misfits, the failure policy, and hand-offs taken out of a prefill instance's
// outputs with their held blocks. The fake worker plays the model.
#include <catch2/catch.hpp>

#include <algorithm>

#include "engine/kv_connector_scheduler.hpp"
#include "fake_worker.hpp"

using namespace parley;
using namespace parley::fakes;

namespace {

const KvLayout kLayout{2, 8, 16, KvDtype::F32};

// A decode instance's request, its blocks held for the KV (scheduled once: nothing computed).
Request remote(const std::string& id, int prompt_len, int n = 1) {
  Request r =
      n > 1 ? parallel_request(id, prompt_of(prompt_len, 3), n, 8, 7) : make_request(id, prompt_of(prompt_len, 3), 8);
  r.kv_transfer = KvTransfer::FromPrefill;
  return r;
}

KvTransferPayload arrived(const std::string& id, int prompt_len, int num_blocks, std::vector<int> first = {5}) {
  KvTransferPayload p;
  p.req_id = id;
  p.num_prompt_tokens = prompt_len;
  p.first_token_ids = std::move(first);
  p.layout = kLayout;
  p.num_blocks = num_blocks;
  return p;
}

}  // namespace

TEST_CASE("kv connector: a decode request is routed once its blocks are held and its KV lands in them",
          "[pd][connector]") {
  Scheduler s(config(32));
  KvConnectorScheduler connector(s, kLayout, true);
  s.add_request(remote("a", 40));
  CHECK(connector.take_routes().empty());  // no blocks yet
  CHECK(s.schedule().total_num_scheduled_tokens == 0);
  const auto routes = connector.take_routes();
  REQUIRE(routes.size() == 1);
  CHECK(connector.take_routes().empty());  // routed once
  KvLayout asked;
  const Request sent = decode_prefill_request(routes[0].prefill_request, &asked);
  CHECK(sent.request_id == "a");
  CHECK(sent.prompt_token_ids == prompt_of(40, 3));
  CHECK(asked == kLayout);
  REQUIRE(connector.waits_for_kv("a"));

  const std::vector<int> held = flatten_block_ids(s.kv_cache_manager().block_ids("a"));
  REQUIRE(held.size() == 3);
  const KvConnectorScheduler::Landing fits = connector.landing(arrived("a", 40, 3));
  CHECK(fits.misfit.empty());
  CHECK(fits.blocks == held);
  KvTransferPayload other_dtype = arrived("a", 40, 3);
  other_dtype.layout.dtype = KvDtype::F16;
  CHECK_THAT(connector.landing(other_dtype).misfit, Catch::Contains("--kv-cache-dtype"));
  CHECK(connector.landing(other_dtype).blocks.empty());
  CHECK_THAT(connector.landing(arrived("a", 39, 3)).misfit, Catch::Contains("does not fit"));
  CHECK_THAT(connector.landing(arrived("a", 40, 2)).misfit, Catch::Contains("does not fit"));

  const auto outputs = connector.loaded(arrived("a", 40, 3));
  REQUIRE(outputs.size() == 1);
  CHECK(outputs[0].new_token_ids == std::vector<int>{5});
  CHECK_FALSE(connector.waits_for_kv("a"));
  // A second arrival (a duplicate, or one after a failover) finds nothing waiting: no landing, no outputs.
  CHECK(connector.loaded(arrived("a", 40, 3)).empty());
  const auto late = connector.landing(arrived("a", 40, 3));
  CHECK((late.blocks.empty() && late.misfit.empty()));
  CHECK_FALSE(connector.failed("a", "too late"));
}

TEST_CASE("kv connector: a failed transfer is prefilled here or ends the request with its children",
          "[pd][connector]") {
  for (const bool recompute : {true, false}) {
    CAPTURE(recompute);
    Scheduler s(config(32));
    KvConnectorScheduler connector(s, kLayout, recompute);
    s.add_request(remote("p", 20, 2));
    s.schedule();
    REQUIRE(connector.take_routes().size() == 1);
    const auto failed = connector.failed("p.0", "the prefill instance went away");
    REQUIRE(failed);
    CHECK_FALSE(connector.waits_for_kv("p.0"));
    if (recompute) {
      CHECK(failed->req_ids.empty());
      CHECK(s.num_waiting() == 1);  // back in the queue, to prefill here
      CHECK(s.kv_cache_manager().block_pool().num_used() == 0);
    } else {
      CHECK(failed->req_ids == std::vector<std::string>{"p.0", "p.1"});
      CHECK_THAT(failed->message, Catch::Contains("the prefill instance went away") &&
                                      Catch::Contains("--kv-load-failure-policy is fail"));
      CHECK_FALSE(s.has_unfinished_requests());
    }
    CHECK_FALSE(connector.failed("p.0", "again"));  // nothing waits any more
  }
}

TEST_CASE("kv connector: hand-offs leave a prefill instance's outputs with their held blocks", "[pd][connector]") {
  Scheduler s(config(32));
  KvConnectorScheduler connector(s, kLayout, true);
  FakeWorker w;
  Request too_long = make_request("long", prompt_of(600, 1), 4);
  CHECK(connector.admit(too_long, 1.0).has_value());  // refused with the scheduler's reason
  CHECK_FALSE(connector.admit(make_request("h", prompt_of(40, 2), 8), 1.0));
  s.add_request(make_request("x", prompt_of(10, 4), 3));  // not routed here: its outputs stay
  std::vector<KvConnectorScheduler::HandOff> hand_offs;
  std::vector<std::string> kept;
  for (int step = 0; step < 10 && hand_offs.empty(); ++step) {
    const SchedulerOutput so = s.schedule();
    std::vector<EngineCoreOutput> outputs = s.update_from_output(so, w.execute(so));
    for (auto& h : connector.take_hand_offs(outputs)) hand_offs.push_back(std::move(h));
    for (const auto& o : outputs) kept.push_back(o.req_id);
  }
  REQUIRE(hand_offs.size() == 1);
  const KvConnectorScheduler::HandOff& h = hand_offs[0];
  CHECK(h.first.req_id == "h");
  CHECK(h.first.new_token_ids.size() == 1);
  CHECK(h.num_prompt_tokens == 40);
  CHECK(h.blocks == connector.held_block_ids("h"));
  CHECK(h.blocks.size() == 3);
  CHECK(std::count(kept.begin(), kept.end(), "h") == 0);
  CHECK(std::count(kept.begin(), kept.end(), "x") > 0);

  const KvTransferPayload header = connector.payload(h);
  CHECK(header.req_id == "h");
  CHECK(header.num_prompt_tokens == 40);
  CHECK(header.layout == kLayout);
  CHECK(header.num_blocks == 3);
  CHECK(header.first_token_ids == h.first.new_token_ids);
  CHECK((header.kv.empty() && header.kv_link.empty()));  // how it travels is the mover's choice

  const int used = s.kv_cache_manager().block_pool().num_used();
  s.release_held("h");
  CHECK(s.kv_cache_manager().block_pool().num_used() == used - 3);
}
