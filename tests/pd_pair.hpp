// One prefill and one decode EngineCore in one process, with the KV transfer between them done by hand (the
// encoded bytes cross as PD's wire would carry them): the engine side of disaggregation, without actors,
// decided by the same KvConnectorScheduler halves the scheduler actors use.
#pragma once
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "engine/kv_connector_scheduler.hpp"
#include "engine/kv_transfer.hpp"
#include "engine_core_runs.hpp"

namespace parley::test {

// One prefill and one decode instance, each with its KV connector's scheduler half (the policy the actors
// use), and the bytes between them moved by hand.
struct PdPair {
  EngineCore prefill, decode;
  KvConnectorScheduler prefill_connector, decode_connector;
  int64_t transfers = 0, bytes = 0, blocks = 0;
  std::function<bool(const std::string&)> drop;  // a transfer that never arrives (the peer died)

  static KvLayout layout_of(EngineCore& core) {
    const KvCache& kv = core.runner().kv_cache();
    return {kv.num_slots(), kv.kv_dim(), kv.block_size(), kv.dtype()};
  }

  PdPair(LlamaModel& model, const SchedulerConfig& c,
         const std::optional<SpeculativeConfig>& decode_spec = std::nullopt, bool async_scheduling = false)
      : prefill(model, c, async_scheduling),
        decode(model, c, async_scheduling, decode_spec),
        prefill_connector(prefill.scheduler(), layout_of(prefill), true),
        decode_connector(decode.scheduler(), layout_of(decode), true) {}

  void add(Request r) {
    r.kv_transfer = KvTransfer::FromPrefill;
    decode.add_request(std::move(r));
  }

  std::vector<EngineCoreOutput> step() {
    std::vector<EngineCoreOutput> out = decode.step();
    for (const KvConnectorScheduler::Route& route : decode_connector.take_routes())  // as PD's wire carries it
      REQUIRE_FALSE(prefill_connector.admit(decode_prefill_request(route.prefill_request), 0.0));
    std::vector<EngineCoreOutput> prefilled = prefill.step();
    for (const KvConnectorScheduler::HandOff& h : prefill_connector.take_hand_offs(prefilled)) {
      REQUIRE(h.first.finish_reason == FinishReason::Length);
      KvTransferPayload sent = prefill_connector.payload(h);
      sent.kv = prefill.runner().kv_cache().export_blocks(h.blocks);
      const std::string wire = encode_kv_transfer(sent);
      prefill.scheduler().release_held(h.first.req_id);  // acknowledged
      ++transfers, bytes += int64_t(wire.size()), blocks += int64_t(h.blocks.size());
      if (drop && drop(h.first.req_id)) continue;
      const KvTransferPayload got = decode_kv_transfer(wire);
      const KvConnectorScheduler::Landing landing = decode_connector.landing(got);
      REQUIRE(landing.misfit.empty());
      REQUIRE(int(landing.blocks.size()) == got.num_blocks);
      decode.runner().kv_cache().import_blocks(landing.blocks, got.kv);
      for (EngineCoreOutput& d : decode_connector.loaded(got)) out.push_back(std::move(d));
    }
    REQUIRE(prefilled.empty());  // every output of a prefill instance is a hand-off
    return out;
  }

  CoreRun run(std::vector<Request> reqs) {
    for (Request& r : reqs) add(std::move(r));
    CoreRun run;
    for (int steps = 0; decode.has_unfinished_requests() || prefill.has_unfinished_requests(); ++steps) {
      REQUIRE(steps < 5000);
      for (const EngineCoreOutput& o : step()) record(run, o);
    }
    decode.step(), prefill.step();  // the workers drop their last finished rows
    for (EngineCore* e : {&prefill, &decode}) {
      REQUIRE(e->scheduler().kv_cache_manager().block_pool().num_used() == 0);
      REQUIRE(e->runner().input_batch().num_reqs() == 0);
      e->scheduler().kv_cache_manager().block_pool().check_invariants();
    }
    REQUIRE(prefill.scheduler().num_held() == 0);
    run.stats = decode.scheduler().stats();
    return run;
  }
};

}  // namespace parley::test
