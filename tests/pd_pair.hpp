// One prefill and one decode EngineCore in one process, with the KV transfer between them done by hand (the
// encoded bytes cross as PD's wire would carry them): the engine side of disaggregation, without actors.
#pragma once
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "engine/kv_transfer.hpp"
#include "engine_core_runs.hpp"

namespace parley::test {

// One prefill and one decode instance, with the transfer between them done by hand.
struct PdPair {
  EngineCore prefill, decode;
  std::map<std::string, Request> sent;                   // decode side: requests awaiting their KV
  std::map<std::string, std::vector<int>> receive_into;  // decode side: the blocks each KV goes into
  int64_t transfers = 0, bytes = 0, blocks = 0;
  std::function<bool(const std::string&)> drop;  // a transfer that never arrives (the peer died)

  PdPair(LlamaModel& model, const SchedulerConfig& c,
         const std::optional<SpeculativeConfig>& decode_spec = std::nullopt, bool async_scheduling = false)
      : prefill(model, c, async_scheduling), decode(model, c, async_scheduling, decode_spec) {}

  void add(Request r) {
    r.kv_transfer = KvTransfer::FromPrefill;
    sent.emplace(r.request_id, r);
    decode.add_request(std::move(r));
  }

  std::vector<EngineCoreOutput> step() {
    std::vector<EngineCoreOutput> out = decode.step();
    for (Scheduler::KvReceive& k : decode.scheduler().take_kv_receives()) {  // route the prompt to the prefill side
      Request r = sent.at(k.req_id);
      r.kv_transfer = KvTransfer::ToDecode;
      prefill.add_request(std::move(r));
      receive_into[k.req_id] = std::move(k.block_ids);
    }
    for (const EngineCoreOutput& o : prefill.step()) {
      REQUIRE(o.finish_reason == FinishReason::Length);
      const std::vector<int> held = prefill.scheduler().held_block_ids(o.req_id);
      const KvCache& kv = prefill.runner().kv_cache();
      KvTransferPayload p{o.req_id,
                          sent.at(o.req_id).num_prompt_tokens(),
                          o.new_token_ids,
                          o.new_logprobs,
                          {kv.num_slots(), kv.kv_dim(), kv.block_size()},
                          int(held.size()),
                          "",
                          kv.export_blocks(held),
                          o.prompt_logprobs};
      const std::string wire = encode_kv_transfer(p);
      prefill.scheduler().release_held(o.req_id);  // acknowledged
      ++transfers, bytes += int64_t(wire.size()), blocks += int64_t(held.size());
      if (drop && drop(o.req_id)) continue;
      const KvTransferPayload got = decode_kv_transfer(wire);
      const std::vector<int>& into = receive_into.at(got.req_id);
      REQUIRE(int(into.size()) == got.num_blocks);
      decode.runner().kv_cache().import_blocks(into, got.kv);
      for (EngineCoreOutput& d : decode.scheduler().finish_remote_kv(got.req_id, got.first_token_ids,
                                                                     got.first_logprobs, got.prompt_logprobs))
        out.push_back(std::move(d));
    }
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
