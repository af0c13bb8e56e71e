// Prefill/decode disaggregation's engine side, in one process: a prefill EngineCore hands
// requests off with their blocks held, the KV crosses as encoded bytes, and a decode EngineCore admits them
// as prefilled. Outputs equal colocated serving token for token; n > 1 prefills and transfers once and
// splits on the decode side; failures recompute or fail; no block is left on either side.
#include <catch2/catch.hpp>

#include <map>

#include "engine/prefill_router.hpp"
#include "engine_core_runs.hpp"
#include "pd_pair.hpp"
#include "tiny_arch.hpp"

namespace parley {

using test::PdPair;

TEST_CASE("pd: 1 prefill + 1 decode equals colocated serving", "[pd][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const auto reqs =
      test::mixed_requests(tok, {"Once upon a time, there was a little girl named Lily.", "The cat sat on the mat.",
                                 "Tom had a red ball and a big blue kite that he loved very much.", "One day"});
  for (const auto& [blocks, async_scheduling] : {std::pair{256, false}, std::pair{24, false}, std::pair{256, true}}) {
    CAPTURE(blocks, async_scheduling);
    const SchedulerConfig c = test::model_scheduler_config(m, blocks);
    const test::CoreRun colocated = test::run_core(m.model, reqs, c, false);
    // With async scheduling a step is planned before the hand-off is known: it must not give the request more.
    PdPair pd(m.model, c, std::nullopt, async_scheduling);
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
  // A request that arrived with its KV and is preempted later recomputes here, like any other.
  const std::vector<Request> singles(reqs.begin(), reqs.end() - 1);
  const SchedulerConfig tight = test::model_scheduler_config(m, 14);
  PdPair pd(m.model, tight);
  const test::CoreRun run = pd.run(singles);
  test::require_same_outputs(run, test::run_core(m.model, singles, tight, false));
  REQUIRE(run.stats.num_preemptions > 0);
  REQUIRE(pd.transfers == int64_t(singles.size()));
}

}  // namespace parley

namespace parley {

TEST_CASE("pd: every architecture's tiny model equals colocated serving", "[pd][arch][model]") {
  for (const char* arch : test::kArchs) {
    CAPTURE(arch);
    test::TinyArch m(arch);
    const Tokenizer tok(*m.file.vocab);
    const auto reqs =
        test::mixed_requests(tok, {"Once upon a time, there was a little girl named Lily. She liked to play.",
                                   "The cat sat on the mat.", "One day"});
    const SchedulerConfig c = m.config(256, true);
    PdPair pd(m.model, c);
    test::require_same_outputs(pd.run(reqs), test::run_core(m.model, reqs, c, false));
    REQUIRE(pd.transfers == int64_t(reqs.size()));
  }
}

TEST_CASE("pd: arrivals on a speculating decode side are padded, every decode step uniform", "[pd][spec][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const auto reqs =
      test::mixed_requests(tok, {"The cat sat on the mat. The dog sat on the mat. The bird sat on the", "One day"});
  const SchedulerConfig c = test::model_scheduler_config(m, 256);
  const auto spec =
      SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2})");
  PdPair pd(m.model, c, spec);
  const test::CoreRun run = pd.run(reqs);
  test::require_same_outputs(run, test::run_core(m.model, reqs, c, false));
  REQUIRE(run.stats.num_decode_steps > 0);
  REQUIRE(run.stats.num_uniform_decode_steps == run.stats.num_decode_steps);
  REQUIRE(run.stats.spec_num_accepted_tokens > 0);
}

TEST_CASE("pd: n = 4 prefills and transfers once, the decode side splits", "[pd][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const SchedulerConfig c = test::model_scheduler_config(m, 256);
  SamplingParams p;
  p.temperature = 0.8f;
  p.max_tokens = 40;
  p.n = 4;
  p.logprobs = 1;
  Request parent("q", tok.encode("Lily and Ben went to the park to play with their new red ball.", true), p, 500);
  for (int i = 0; i < 4; ++i)
    parent.child_req_ids.push_back(i ? "q." + std::to_string(i) : "q"), parent.child_seeds.push_back(500 + uint64_t(i));
  PdPair pd(m.model, c);
  const test::CoreRun split = pd.run({parent});
  REQUIRE(pd.transfers == 1);
  REQUIRE(pd.blocks == (parent.num_prompt_tokens() + c.block_size - 1) / c.block_size);
  REQUIRE(pd.prefill.scheduler().stats().prefill_tokens_computed == parent.num_prompt_tokens());
  REQUIRE(pd.decode.scheduler().stats().prefill_tokens_computed == 0);
  // Choice i equals an n = 1 request seeded 500 + i, served colocated.
  std::vector<Request> singles;
  for (int i = 0; i < 4; ++i) {
    SamplingParams one = p;
    one.n = 1;
    singles.emplace_back(parent.child_req_ids[size_t(i)], parent.prompt_token_ids, one, 500 + uint64_t(i));
  }
  test::require_same_outputs(split, test::run_core(m.model, singles, c, false));
  REQUIRE(split.tokens.size() == 4);
}

TEST_CASE("pd: prompt logprobs are scored on the prefill side and travel with the first tokens",
          "[pd][prompt_logprobs][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  auto reqs =
      test::mixed_requests(tok, {"Once upon a time, there was a little girl named Lily.", "The cat sat on the mat."});
  for (Request& r : reqs)
    if (r.request_id == "m0" || r.request_id == "n.0") r.sampling_params.prompt_logprobs = r.request_id == "m0" ? 3 : 1;
  const SchedulerConfig c = test::model_scheduler_config(m, 256);
  const test::CoreRun colocated = test::run_core(m.model, reqs, c, false);
  REQUIRE(colocated.prompt_logprobs.size() == 4);  // m0 and the n = 3 request's every choice
  for (const bool lost : {false, true}) {
    CAPTURE(lost);
    PdPair pd(m.model, c);
    // A lost transfer is prefilled on the decode side instead, which then scores the prompt itself.
    pd.drop = [&](const std::string& id) {
      return lost && id == "n.0" && pd.decode.scheduler().fail_remote_kv(id, true).empty();
    };
    const test::CoreRun run = pd.run(reqs);
    test::require_same_outputs(run, colocated);
    REQUIRE((pd.decode.scheduler().stats().prefill_tokens_computed > 0) == lost);
  }
}

TEST_CASE("pd: a lost transfer recomputes locally or fails, leaking nothing", "[pd][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const auto reqs =
      test::mixed_requests(tok, {"Once upon a time, there was a little girl named Lily.", "The cat sat on the mat."});
  const SchedulerConfig c = test::model_scheduler_config(m, 256);
  const test::CoreRun colocated = test::run_core(m.model, reqs, c, false);
  for (const bool recompute : {true, false}) {
    CAPTURE(recompute);
    PdPair pd(m.model, c);
    std::vector<std::string> failed;
    // The prefill instance "dies" for two requests (one of them the n = 3 parent): their KV never arrives.
    pd.drop = [&](const std::string& id) {
      if (id != "m1" && id != "n.0") return false;
      for (const std::string& live : pd.decode.scheduler().fail_remote_kv(id, recompute)) failed.push_back(live);
      return true;
    };
    const test::CoreRun run = pd.run(reqs);
    if (recompute) {
      test::require_same_outputs(run, colocated);
      REQUIRE(failed.empty());
      REQUIRE(pd.decode.scheduler().stats().prefill_tokens_computed > 0);  // the two prompts, here
    } else {
      REQUIRE(failed == std::vector<std::string>{"m1", "n.0", "n.1", "n.2"});
      for (const auto& [id, tokens] : colocated.tokens)
        if (std::find(failed.begin(), failed.end(), id) == failed.end())
          REQUIRE(run.tokens.at(id) == tokens);
        else
          REQUIRE_FALSE(run.tokens.count(id));
    }
  }
}

TEST_CASE("pd: an abort while the KV is on its way frees the blocks and the late KV is dropped", "[pd][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const SchedulerConfig c = test::model_scheduler_config(m, 64);
  PdPair pd(m.model, c);
  SamplingParams p;
  p.max_tokens = 5;
  pd.add(
      Request("a", tok.encode("Once upon a time, there was a little girl named Lily who loved to play.", true), p, 1));
  REQUIRE(pd.decode.step().empty());  // admitted: blocks for the prompt, nothing computed
  REQUIRE(pd.decode.scheduler().num_waiting_for_remote_kv() == 1);
  const int held = pd.decode.scheduler().kv_cache_manager().block_pool().num_used();
  REQUIRE(held == 2);
  REQUIRE(pd.decode.scheduler().stats().num_waiting == 1);
  REQUIRE(pd.decode.abort_requests({"a"}) == std::vector<std::string>{"a"});
  REQUIRE(pd.decode.scheduler().kv_cache_manager().block_pool().num_used() == 0);
  REQUIRE(pd.decode.scheduler().finish_remote_kv("a", {7}, {}, {}).empty());
  REQUIRE(pd.decode.scheduler().fail_remote_kv("a", true).empty());
  REQUIRE_FALSE(pd.decode.has_unfinished_requests());
}

TEST_CASE("pd: the KV transfer payload round-trips and refuses what does not fit", "[pd]") {
  KvTransferPayload p{"req-1",
                      20,
                      {5, 9},
                      {{5, -0.25f, 1, {{5, -0.25f}}}, {9, -1.5f, 3, {{2, -0.5f}}}},
                      {2, 4, 16},
                      2,
                      "",
                      {},
                      {{7, -2.5f, 4, {{3, -0.125f}}}}};
  p.kv.resize(size_t(2 * 2 * 4 * 16 * 2) * 4);  // an F32 layout's bytes
  for (size_t i = 0; i < p.kv.size(); ++i) p.kv[i] = uint8_t(i * 7 + 3);
  const std::string wire = encode_kv_transfer(p);
  const KvTransferPayload back = decode_kv_transfer(wire);
  REQUIRE(back.req_id == "req-1");
  REQUIRE(back.num_prompt_tokens == 20);
  REQUIRE(back.first_token_ids == std::vector<int>{5, 9});
  REQUIRE(back.first_logprobs.size() == 2);
  REQUIRE(back.first_logprobs[1].rank == 3);
  REQUIRE(back.first_logprobs[1].top == std::vector<std::pair<int, float>>{{2, -0.5f}});
  REQUIRE(back.prompt_logprobs == p.prompt_logprobs);
  REQUIRE(back.layout == KvLayout{2, 4, 16});
  REQUIRE(back.kv == p.kv);
  REQUIRE_THROWS_WITH(decode_kv_transfer(wire.substr(0, wire.size() - 4)),
                      Catch::Contains("bytes of KV, the header says"));
  REQUIRE_THROWS_WITH(decode_kv_transfer(wire.substr(0, 3)), Catch::Contains("only 3 bytes"));
  REQUIRE_THROWS_WITH(decode_kv_transfer(std::string("\x40\0\0\0abc", 7)),
                      Catch::Contains("the header needs 64 bytes"));
  KvTransferPayload short_blocks = p;
  short_blocks.num_blocks = 1;  // 16 slots cannot hold 20 prompt tokens
  REQUIRE_THROWS_WITH(decode_kv_transfer(encode_kv_transfer(short_blocks)), Catch::Contains("inconsistent header"));
  // A KV cache of another shape refuses the data.
  KvCache other(LlamaConfig{64, 128, 1, 8, 4, 512, 64}, 8, 16);
  REQUIRE_THROWS_AS(other.import_blocks(std::vector<int>{0, 1}, back.kv), std::invalid_argument);
  REQUIRE_THROWS_AS(other.import_blocks(std::vector<int>{0, 8}, back.kv), std::out_of_range);
  // On a device link only the header travels; it still says how many floats will follow there.
  KvTransferPayload linked = p;
  linked.kv_link = "link 00c0ffee to h:1";
  REQUIRE_THROWS_AS(encode_kv_transfer(linked), std::logic_error);
  linked.kv.clear();
  const std::string head = encode_kv_transfer(linked);
  REQUIRE(head.size() - linked.kv_link.size() + p.kv.size() == wire.size());  // the name, not the KV's bytes
  const KvTransferPayload linked_back = decode_kv_transfer(head);
  REQUIRE(linked_back.kv_link == "link 00c0ffee to h:1");
  REQUIRE(linked_back.kv.empty());
  REQUIRE(linked_back.layout.bytes(linked_back.num_blocks) == int64_t(p.kv.size()));
  REQUIRE_THROWS_WITH(decode_kv_transfer(head + std::string(8, '\0')),
                      Catch::Contains("bytes of KV, the header says 0"));
}

}  // namespace parley

namespace parley {

TEST_CASE("pd: a prefill request keeps every field that changes its tokens", "[pd]") {
  SamplingParams p;
  p.n = 3;
  p.temperature = 0.7f;
  p.top_k = 40;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = -0.25f;
  p.repetition_penalty = 1.1f;
  p.seed = 12345678901234ull;
  p.max_tokens = 77;
  p.min_tokens = 4;
  p.ignore_eos = true;
  p.stop = {"\n\n", "The end"};
  p.stop_token_ids = {13, 29};
  p.include_stop_str_in_output = true;
  p.logprobs = 2;
  p.prompt_logprobs = 4;
  p.logit_bias = {{5, -1.5f}, {9, 2.0f}};
  Request r("cmpl-7", {1, 400, 35, 2}, p, 12345678901234ull);
  r.child_req_ids = {"cmpl-7", "cmpl-7.1", "cmpl-7.2"};
  r.child_seeds = {12345678901234ull, 12345678901235ull, 12345678901236ull};
  const Request back = decode_prefill_request(encode_prefill_request(r));
  REQUIRE(back.request_id == r.request_id);
  REQUIRE(back.prompt_token_ids == r.prompt_token_ids);
  REQUIRE(back.seed == r.seed);
  REQUIRE(back.child_req_ids == r.child_req_ids);
  REQUIRE(back.child_seeds == r.child_seeds);
  REQUIRE(back.kv_transfer == KvTransfer::ToDecode);
  const SamplingParams& q = back.sampling_params;
  REQUIRE((q.n == 3 && q.temperature == 0.7f && q.top_k == 40 && q.top_p == 0.9f && q.min_p == 0.05f));
  REQUIRE((q.presence_penalty == 0.5f && q.frequency_penalty == -0.25f && q.repetition_penalty == 1.1f));
  REQUIRE((q.seed == p.seed && q.max_tokens == 77 && q.min_tokens == 4 && q.ignore_eos));
  REQUIRE((q.stop == p.stop && q.stop_token_ids == p.stop_token_ids && q.include_stop_str_in_output));
  REQUIRE((q.logprobs == 2 && q.prompt_logprobs == 4 && q.logit_bias == p.logit_bias));
  SamplingParams plain;
  const Request unseeded = decode_prefill_request(encode_prefill_request(Request("a", {1}, plain, 9)));
  REQUIRE_FALSE(unseeded.sampling_params.seed.has_value());
  REQUIRE_FALSE(unseeded.sampling_params.logprobs.has_value());
  REQUIRE_FALSE(unseeded.sampling_params.prompt_logprobs.has_value());
  REQUIRE_THROWS_WITH(decode_prefill_request(R"({"version": 1})"),
                      Catch::Contains("request version 1"));  // an older build
  REQUIRE_THROWS_WITH(decode_prefill_request(R"({"version": 2})"),
                      Catch::Contains("bad prefill request"));  // fields missing
  REQUIRE_THROWS_WITH(decode_prefill_request("not json"), Catch::Contains("bad prefill request"));
}

}  // namespace parley

namespace parley {

TEST_CASE("pd: the prefill router picks among peers that are up and tracks transfers", "[pd]") {
  REQUIRE(PeerAddress::parse("127.0.0.1:7001").port == 7001);
  REQUIRE(PeerAddress::parse("host.example:80").host == "host.example");
  for (const char* bad : {"nohost", ":80", "h:", "h:0", "h:70000", "h:8x"})
    REQUIRE_THROWS_AS(PeerAddress::parse(bad), std::invalid_argument);
  PrefillRouter<int> rr({PeerAddress::parse("a:1"), PeerAddress::parse("b:2"), PeerAddress::parse("c:3")},
                        RoutingPolicy::RoundRobin);
  REQUIRE_FALSE(rr.pick().has_value());  // nobody is up yet
  REQUIRE(rr.connect_due(1, 0.0));
  rr.connecting(1);
  REQUIRE_FALSE(rr.connect_due(1, 0.0));  // one attempt at a time
  rr.connect_failed(1, 30.0);             // failed authentication: held off
  REQUIRE_FALSE(rr.connect_due(1, 29.0));
  REQUIRE(rr.connect_due(1, 30.0));
  rr.up(0, 100), rr.up(2, 102);
  REQUIRE(rr.peer(2).actor == 102);
  REQUIRE_FALSE(rr.connect_due(0, 0.0));
  REQUIRE(*rr.pick() == 0);
  REQUIRE(*rr.pick() == 2);
  REQUIRE(*rr.pick() == 0);
  rr.started("x", 0, 10.0), rr.started("y", 2, 5.0), rr.started("z", 0, 20.0);
  REQUIRE_THROWS_AS(rr.started("x", 2, 1.0), std::logic_error);
  REQUIRE(rr.expired(6.0) == std::vector<std::string>{"y"});
  REQUIRE(rr.in_flight(0) == 2);
  auto lost = rr.down(0);  // peer 0 died: its transfers failed
  std::sort(lost.begin(), lost.end());
  REQUIRE(lost == std::vector<std::string>{"x", "z"});
  REQUIRE(rr.in_flight() == 1);
  REQUIRE(rr.peer(0).actor == 0);  // no handle kept to a peer that is down
  REQUIRE(rr.connect_due(0, 0.0));
  REQUIRE(*rr.pick() == 2);
  REQUIRE(*rr.pick() == 2);
  REQUIRE(rr.finished("y") == std::optional<size_t>(2));
  REQUIRE_FALSE(rr.finished("y").has_value());
  PrefillRouter<int> least({PeerAddress::parse("a:1"), PeerAddress::parse("b:2")}, RoutingPolicy::LeastLoaded);
  least.up(0, 1), least.up(1, 2);
  least.started("p", 0, 1.0), least.started("q", 0, 1.0);
  REQUIRE(*least.pick() == 1);
  least.started("r", 1, 1.0);
  REQUIRE(*least.pick() == 1);  // 1 in flight against 2
  least.finished("p"), least.finished("q");
  REQUIRE(*least.pick() == 0);
}

}  // namespace parley
