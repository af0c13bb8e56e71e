// Prefill/decode disaggregation's engine side (MISSION C7, C10), in one process: a prefill EngineCore hands
// requests off with their blocks held, the KV crosses as encoded bytes, and a decode EngineCore admits them
// as prefilled. Outputs equal colocated serving token for token; n > 1 prefills and transfers once and
// splits on the decode side; failures recompute or fail; no block is left on either side.
#include <catch2/catch.hpp>

#include <map>

#include "engine/kv_transfer.hpp"
#include "engine_core_runs.hpp"

namespace parley {
namespace {

// One prefill and one decode instance, with the transfer between them done by hand.
struct PdPair {
  EngineCore prefill, decode;
  std::map<std::string, Request> sent;                   // decode side: requests awaiting their KV
  std::map<std::string, std::vector<int>> receive_into;  // decode side: the blocks each KV goes into
  int64_t transfers = 0, bytes = 0, blocks = 0;
  std::function<bool(const std::string&)> drop;          // a transfer that never arrives (the peer died)

  PdPair(LlamaModel& model, const SchedulerConfig& c) : prefill(model, c), decode(model, c) {}

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
      KvTransferPayload p{o.req_id, sent.at(o.req_id).num_prompt_tokens(), o.new_token_ids, o.new_logprobs,
                          {kv.num_layers(), kv.kv_dim(), kv.block_size()}, int(held.size()), kv.export_blocks(held)};
      const std::string wire = encode_kv_transfer(p);
      prefill.scheduler().release_held(o.req_id);  // acknowledged
      ++transfers, bytes += int64_t(wire.size()), blocks += int64_t(held.size());
      if (drop && drop(o.req_id)) continue;
      const KvTransferPayload got = decode_kv_transfer(wire);
      const std::vector<int>& into = receive_into.at(got.req_id);
      REQUIRE(int(into.size()) == got.num_blocks);
      decode.runner().kv_cache().import_blocks(into, got.kv);
      for (EngineCoreOutput& d : decode.scheduler().finish_remote_kv(got.req_id, got.first_token_ids, got.first_logprobs))
        out.push_back(std::move(d));
    }
    return out;
  }

  test::CoreRun run(std::vector<Request> reqs) {
    for (Request& r : reqs) add(std::move(r));
    test::CoreRun run;
    for (int steps = 0; decode.has_unfinished_requests() || prefill.has_unfinished_requests(); ++steps) {
      REQUIRE(steps < 5000);
      for (const EngineCoreOutput& o : step()) {
        auto& t = run.tokens[o.req_id];
        t.insert(t.end(), o.new_token_ids.begin(), o.new_token_ids.end());
        for (const auto& lp : o.new_logprobs) run.logprobs[o.req_id].push_back(lp.logprob);
        if (o.finished()) run.finish[o.req_id] = o.finish_reason;
      }
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

}  // namespace

TEST_CASE("pd: 1 prefill + 1 decode equals colocated serving", "[pd][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const auto reqs = test::mixed_requests(tok, {"Once upon a time, there was a little girl named Lily.", "The cat sat on the mat.",
                                               "Tom had a red ball and a big blue kite that he loved very much.", "One day"});
  for (const int blocks : {256, 24}) {
    CAPTURE(blocks);
    const SchedulerConfig c = test::model_scheduler_config(m, blocks);
    const test::CoreRun colocated = test::run_core(m.model, reqs, c, false);
    PdPair pd(m.model, c);
    const test::CoreRun split = pd.run(reqs);
    test::require_same_outputs(split, colocated);
    REQUIRE(pd.transfers == int64_t(reqs.size()));  // one per request, n > 1 included
    if (blocks == 256) {
      // The decode side computed no prompt token; the prefill side each prompt once (less its prefix hits).
      REQUIRE(pd.decode.scheduler().stats().prefill_tokens_computed == 0);
      REQUIRE(pd.prefill.scheduler().stats().prefill_tokens_computed == colocated.stats.prefill_tokens_computed);
    } else {
      REQUIRE(split.stats.num_preemptions > 0);  // the decode side recomputes what it preempts, locally
    }
    REQUIRE(pd.decode.scheduler().stats().num_splits == 1);
    REQUIRE(pd.prefill.scheduler().stats().num_splits == 0);
  }
}

}  // namespace parley
