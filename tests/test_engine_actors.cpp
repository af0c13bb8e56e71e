// The actor engine end to end without HTTP (EngineClient over CAF): token ids of concurrent requests
// equal the same requests alone and equal the offline engine's; a tiny KV pool preempts and changes
// nothing; aborts and stop strings finish requests and every block returns.
#include <catch2/catch.hpp>

#include "http/admin_json.hpp"
#include "engine_client_util.hpp"
#include "model/cuda/cuda_model.hpp"
#include "model/convert.hpp"
#include "model/random_model.hpp"

namespace parley {

TEST_CASE("actor engine: concurrent requests give the tokens each gives alone and the offline engine gives",
          "[actors]") {
  auto engine = EngineClient::start(stories_config());
  const auto specs = specs_for(engine->tokenizer(), 16, "r");
  const auto together = run(*engine, specs);
  REQUIRE(together.size() == 16);
  for (const auto& s : specs) {
    const auto alone = run(*engine, {s});
    REQUIRE(alone.at(s.req_id) == together.at(s.req_id));
  }
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  std::vector<GenerationRequest> reqs;
  for (const auto& s : specs) reqs.push_back({s.prompt_token_ids, s.params});
  const auto offline = OfflineEngine(m.model, m.engine_options()).generate(reqs);
  for (size_t i = 0; i < specs.size(); ++i) REQUIRE(offline[i].output_token_ids == together.at(specs[i].req_id));
  require_idle(*engine);
}

TEST_CASE("actor engine: a pool small enough to preempt gives the same tokens", "[actors]") {
  auto big = EngineClient::start(stories_config());
  auto small = EngineClient::start(stories_config(10));  // 160 token slots for 16 requests of up to ~70 tokens
  const auto specs = specs_for(big->tokenizer(), 16, "p");
  const auto a = run(*big, specs);
  const auto b = run(*small, specs);
  REQUIRE(a == b);
  const std::string m = metrics_of(*small);
  REQUIRE(metric(m, "parley:num_preemptions_total") > 0);
  REQUIRE(metric(metrics_of(*big), "parley:num_preemptions_total") == 0);
  require_idle(*small);
}

TEST_CASE("actor engine: aborts mid-generation finish with abort and free every block", "[actors]") {
  auto engine = EngineClient::start(stories_config());
  auto specs = specs_for(engine->tokenizer(), 6, "a");
  for (auto& s : specs) s.params.max_tokens = 400, s.params.ignore_eos = true;
  auto sink = std::make_shared<CollectingSink>();
  std::once_flag aborted;
  EngineClient* e = engine.get();
  sink->on_each = [&](const RequestOutput& o) {
    if (o.num_output_tokens >= 5) std::call_once(aborted, [&] { e->abort({"a0", "a2", "a4", "unknown"}); });
  };
  engine->submit(specs, sink);
  REQUIRE(sink->wait(6));
  for (int i = 0; i < 6; ++i) {
    const auto& out = sink->total.at("a" + std::to_string(i));
    REQUIRE(out.finish_reason == (i % 2 == 0 ? FinishReason::Abort : FinishReason::Length));
    if (i % 2) REQUIRE(out.token_ids.size() == 400);
  }
  require_idle(*engine);
  std::smatch m;
  const std::string text = metrics_of(*engine);
  REQUIRE(std::regex_search(text, m,
                            std::regex("parley:request_success_total\\{[^}]*finished_reason=\"abort\"\\} ([0-9.]+)")));
  REQUIRE(std::stod(m[1]) == 3);  // a0, a2, a4; "unknown" was no request
}

TEST_CASE("actor engine: a request the worker cannot run fails alone with an error, the others equal themselves alone",
          "[actors]") {
  auto engine = EngineClient::start(stories_config());
  const auto specs = specs_for(engine->tokenizer(), 6, "f");
  const auto alone = run(*engine, specs);
  auto with_bad = specs;
  // The ingress refuses this grammar; sent to the engine directly it reaches the worker, whose compile throws.
  with_bad[2].params.structured_outputs = StructuredOutputsParams{StructuredOutputsParams::Kind::Grammar, "root ::= ("};
  auto sink = std::make_shared<CollectingSink>();
  engine->submit(with_bad, sink);
  REQUIRE(sink->wait(6));
  for (int i = 0; i < 6; ++i) {
    const std::string id = "f" + std::to_string(i);
    const RequestOutput& out = sink->total.at(id);
    if (i == 2) {
      CHECK(out.finish_reason == FinishReason::Abort);
      CHECK_THAT(out.error, Catch::Contains("structured output"));  // an error for its client, not a bare abort
    } else {
      CHECK(out.finish_reason != FinishReason::Abort);
      CHECK(out.error.empty());
      CHECK(out.token_ids == alone.at(id));  // recomputed after the lost step: the same tokens
    }
  }
  CHECK(metric(metrics_of(*engine), "parley:engine_step_failures_total") == 1);
  require_idle(*engine);
}

TEST_CASE("actor engine: a stop string ends the request in the engine too", "[actors]") {
  auto engine = EngineClient::start(stories_config());
  EngineRequestSpec s = specs_for(engine->tokenizer(), 1, "s")[0];  // greedy "Once upon a time"
  s.params.max_tokens = 60;
  const auto full = run(*engine, {s}).at("s0");
  s.params.stop = {"Lily"};
  auto sink = std::make_shared<CollectingSink>();
  engine->submit({s}, sink);
  REQUIRE(sink->wait(1));
  const RequestOutput& out = sink->total.at("s0");
  REQUIRE(out.finish_reason == FinishReason::Stop);
  REQUIRE(std::get<std::string>(out.stop_reason) == "Lily");
  REQUIRE(out.text == ", there was a little girl named ");
  REQUIRE(out.token_ids.size() < full.size());
  REQUIRE(std::equal(out.token_ids.begin(), out.token_ids.end(), full.begin()));
  require_idle(*engine);
}

TEST_CASE("actor engine: a submission over the queue bound and an impossible request are refused whole", "[actors]") {
  EngineConfig c = stories_config();
  c.scheduler.max_waiting = 2;
  auto engine = EngineClient::start(c);
  auto sink = std::make_shared<CollectingSink>();
  engine->submit(specs_for(engine->tokenizer(), 3, "q"), sink);  // 3 > 2 waiting: never fits, all refused
  REQUIRE(sink->wait(1));
  REQUIRE(sink->rejected_status == 400);
  REQUIRE_THAT(sink->rejected_message, Catch::Contains("3 sequences") && Catch::Contains("at most 2"));
  REQUIRE(sink->total.empty());
  auto bad = std::make_shared<CollectingSink>();
  auto specs = specs_for(engine->tokenizer(), 2, "b");
  specs[1].prompt_token_ids.push_back(9999);
  engine->submit(specs, bad);
  REQUIRE(bad->wait(1));
  REQUIRE(bad->rejected_status == 400);
  REQUIRE_THAT(bad->rejected_message, Catch::Contains("outside the vocabulary"));
  require_idle(*engine);
}

}  // namespace parley

namespace parley {

TEST_CASE("actor engine: a prefix-cache hit gives the tokens a full prefill gives", "[actors]") {
  auto engine = EngineClient::start(stories_config());
  EngineRequestSpec s = specs_for(engine->tokenizer(), 2, "c")[1];  // seeded, temperature 0.8
  s.prompt_token_ids = engine->tokenizer().encode(
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
      "friends and her big red ball.",
      true);
  REQUIRE(s.prompt_token_ids.size() > 32);
  const auto first = run(*engine, {s}).at("c1");
  const double computed = metric(metrics_of(*engine), "parley:prefill_tokens_computed_total");
  REQUIRE(computed == double(s.prompt_token_ids.size()));
  const auto second = run(*engine, {s}).at("c1");
  REQUIRE(second == first);
  const std::string m = metrics_of(*engine);
  const int hit = int((s.prompt_token_ids.size() - 1) / 16 * 16);
  REQUIRE(metric(m, "parley:prefix_cache_hits_total") == hit);
  REQUIRE(metric(m, "parley:prefill_tokens_computed_total") == computed + double(s.prompt_token_ids.size() - hit));
  require_idle(*engine);
}

}  // namespace parley

namespace parley {

TEST_CASE("actor engine: async scheduling on and off give the same outputs", "[actors][async]") {
  auto outputs = [](bool async_scheduling) {
    EngineConfig c = stories_config(12);  // 192 slots for 16 requests: preemption
    c.async_scheduling = async_scheduling;
    auto engine = EngineClient::start(c);
    auto specs = specs_for(engine->tokenizer(), 16, "x");
    specs[3].params.n = 3;
    specs[3].child_req_ids = {"x3", "x3.1", "x3.2"};
    specs[5].params.stop = {".", "!"};
    specs[7].params.min_tokens = 20;
    specs[9].params.logprobs = 1;
    auto sink = std::make_shared<CollectingSink>();
    engine->submit(specs, sink);
    REQUIRE(sink->wait(18));
    require_idle(*engine);
    const std::string m = metrics_of(*engine);
    REQUIRE(metric(m, "parley:num_preemptions_total") > 0);
    REQUIRE(metric(m, "parley:engine_steps_total") > 0);
    const auto steps = idle_admin_view(*engine).at("steps");
    REQUIRE(steps.at("async_scheduling") == async_scheduling);
    REQUIRE(steps.at("total") == metric(metrics_of(*engine), "parley:engine_steps_total"));
    std::map<std::string, std::tuple<std::vector<int>, std::string, FinishReason>> got;
    for (const auto& [id, o] : sink->total) got[id] = {o.token_ids, o.text, o.finish_reason};
    return got;
  };
  const auto sync = outputs(false);
  const auto async = outputs(true);
  REQUIRE(sync.size() == 18);
  REQUIRE(async == sync);
  REQUIRE(std::get<FinishReason>(sync.at("x5")) == FinishReason::Stop);
  REQUIRE(std::get<std::vector<int>>(sync.at("x7")).size() >= 20);
}

}  // namespace parley

namespace parley {

TEST_CASE("actor engine: a stop string or EOS wastes at most one step", "[actors][async]") {
  for (bool async_scheduling : {false, true}) {
    CAPTURE(async_scheduling);
    EngineConfig c = stories_config();
    c.async_scheduling = async_scheduling;
    auto engine = EngineClient::start(c);
    EngineRequestSpec s = specs_for(engine->tokenizer(), 1, "w")[0];  // greedy "Once upon a time"
    s.params.max_tokens = 60;
    s.params.stop = {"Lily"};
    auto sink = std::make_shared<CollectingSink>();
    engine->submit({s}, sink);
    REQUIRE(sink->wait(1));
    const RequestOutput& out = sink->total.at("w0");
    REQUIRE(out.finish_reason == FinishReason::Stop);
    const int tokens = int(out.token_ids.size());
    // K steps sample K tokens; then one step tells the worker to drop the row. Async may have planned one
    // more step before the stop was checked (its token is dropped), never two: planning waits for the check.
    const auto steps = idle_admin_view(*engine).at("steps");
    const int total = steps.at("total").get<int>();
    if (async_scheduling)
      REQUIRE((total == tokens + 1 || total == tokens + 2));
    else
      REQUIRE(total == tokens + 1);
    // EOS: the scheduler sees it at once; async has at most the step in flight to discard.
    s.req_id = "e0";
    s.params.stop.clear();
    s.params.max_tokens = 400;
    s.params.ignore_eos = false;
    const auto before = steps.at("total").get<int>();
    const auto eos_run = run(*engine, {s}).at("e0");
    REQUIRE(eos_run.size() < 400);  // the greedy story ends with EOS
    const auto after = idle_admin_view(*engine).at("steps");
    REQUIRE(after.at("total").get<int>() - before == int(eos_run.size()) + (async_scheduling ? 2 : 1));
    REQUIRE(after.at("discarded_tokens").get<int>() - steps.at("discarded_tokens").get<int>() ==
            (async_scheduling ? 1 : 0));
    require_idle(*engine);
  }
}

}  // namespace parley

namespace parley {

TEST_CASE("actor engine: n-gram speculation gives the tokens it gives off", "[actors][spec]") {
  auto outputs = [](std::optional<SpeculativeConfig> spec, bool async_scheduling) {
    EngineConfig c = stories_config();
    c.async_scheduling = async_scheduling;
    c.speculative = spec;
    auto engine = EngineClient::start(c);
    auto specs = specs_for(engine->tokenizer(), 12, "g");
    specs[3].params.n = 2;
    specs[3].child_req_ids = {"g3", "g3.1"};
    const auto ids = run(*engine, specs);
    require_idle(*engine);
    return std::make_pair(ids, metrics_of(*engine));
  };
  const auto spec =
      SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2})");
  const auto [off, off_metrics] = outputs(std::nullopt, false);
  const auto [on, on_metrics] = outputs(spec, false);
  REQUIRE(on.size() == 13);
  REQUIRE(on == off);
  const auto [async_on, async_metrics] = outputs(spec, true);  // async scheduling with padded speculation
  REQUIRE(async_on == off);
  REQUIRE(metric(async_metrics, "parley:uniform_decode_steps_total") ==
          metric(async_metrics, "parley:decode_steps_total"));
  REQUIRE(metric(on_metrics, "parley:spec_decode_num_draft_tokens_total") > 0);
  REQUIRE(metric(on_metrics, "parley:spec_decode_num_accepted_tokens_total") > 0);
  REQUIRE(metric(on_metrics, "parley:spec_decode_mean_acceptance_length") > 1);
  REQUIRE(metric(on_metrics, "parley:decode_steps_total") > 0);
  REQUIRE(metric(on_metrics, "parley:uniform_decode_steps_total") == metric(on_metrics, "parley:decode_steps_total"));
  REQUIRE(metric(on_metrics, "parley:engine_steps_total") < metric(off_metrics, "parley:engine_steps_total"));
  REQUIRE(metric(off_metrics, "parley:spec_decode_num_drafts_total") == 0);
  // Drafting models through the actors: the target's own first layers, and a draft GGUF with its own KV.
  for (const std::string& json :
       {std::string(R"({"method": "layer_skip", "num_speculative_tokens": 3, "draft_layers": 3})"),
        R"({"method": "draft_model", "num_speculative_tokens": 3, "model": ")" +
            test::shared_model("stories260K.gguf") + "\"}"}) {
    CAPTURE(json);
    const auto [drafted, drafted_metrics] = outputs(SpeculativeConfig::parse(json), true);
    REQUIRE(drafted == off);
    REQUIRE(metric(drafted_metrics, "parley:spec_decode_num_accepted_tokens_total") > 0);
    REQUIRE(metric(drafted_metrics, "parley:uniform_decode_steps_total") ==
            metric(drafted_metrics, "parley:decode_steps_total"));
  }
}

TEST_CASE("actor engine: MTP drafting gives the tokens it gives off", "[actors][spec][mtp]") {
  test::TempDir dir;
  write_model_gguf(make_random_model(builtin_model_config(), 9, true), dir / "mtp.gguf", GgmlType::F32);
  auto outputs = [&](std::optional<SpeculativeConfig> spec) {
    EngineConfig c = stories_config();
    c.model_path = dir / "mtp.gguf";
    c.tokenizer_path = "";
    c.speculative = spec;
    auto engine = EngineClient::start(c);
    const auto ids = run(*engine, specs_for(engine->tokenizer(), 8, "m"));
    require_idle(*engine);
    return std::make_pair(ids, metrics_of(*engine));
  };
  const auto [off, off_metrics] = outputs(std::nullopt);
  const auto [on, on_metrics] = outputs(SpeculativeConfig::parse(R"({"method": "mtp", "num_speculative_tokens": 2})"));
  REQUIRE(on.size() == 8);
  REQUIRE(on == off);
  REQUIRE(metric(on_metrics, "parley:spec_decode_num_draft_tokens_total") > 0);
  REQUIRE(metric(on_metrics, "parley:uniform_decode_steps_total") == metric(on_metrics, "parley:decode_steps_total"));
  // A model without a head refuses mtp at start.
  EngineConfig plain = stories_config();
  plain.speculative = SpeculativeConfig::parse(R"({"method": "mtp", "num_speculative_tokens": 2})");
  REQUIRE_THROWS_WITH(EngineClient::start(plain), Catch::Contains("needs a multi-token-prediction head"));
}

TEST_CASE("actor engine: a draft model with another vocabulary is refused at start", "[actors][spec]") {
  test::TempDir dir;
  write_model_gguf(make_random_model(builtin_model_config(), 3), dir / "other.gguf", GgmlType::F32);
  EngineConfig c = stories_config();
  c.speculative = SpeculativeConfig::parse(R"({"method": "draft_model", "num_speculative_tokens": 2, "model": ")" +
                                           dir / "other.gguf" + "\"}");
  REQUIRE_THROWS_WITH(EngineClient::start(c), Catch::Contains("has another vocabulary: token "));
}

}  // namespace parley

namespace parley {
namespace {

// What starting the engine with stories_config() changed by `change` says: the refusal, or "accepted".
std::string refusal(const std::function<void(EngineConfig&)>& change) {
  EngineConfig c = stories_config();
  change(c);
  try {
    EngineClient::start(c);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("actor engine: PD flags are checked together", "[actors][pd]") {
  const auto refused = refusal;
  REQUIRE_THROWS_WITH(parse_choice<Role>("both"),
                      "--role must be colocated, prefill or decode, got 'both'");  // on the command line and in files
  REQUIRE_THAT(refused([](EngineConfig& c) { c.role = Role::Decode; }),
               Catch::Contains("--role decode needs --prefill-peers"));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.prefill_peers = {"127.0.0.1:9"}; }),
               Catch::Contains("--prefill-peers applies only to --role decode"));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.role = Role::Decode, c.prefill_peers = {"nohost"}; }),
               Catch::Contains("is not host:port"));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.kv_port = 7000; }),
               Catch::Contains("--kv-port applies only to --role prefill"));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.role = Role::Prefill, c.kv_port = 70000; }),
               Catch::Contains("--kv-port must be in 0..65535"));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.prefill_routing = RoutingPolicy::LeastLoaded; }),
               Catch::Contains("apply only to --role decode"));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.role = Role::Prefill, c.kv_recompute_on_failure = false; }),
               Catch::Contains("apply only to --role decode"));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.kv_transfer_timeout_s = 5; }),
               Catch::Contains("--kv-transfer-timeout applies only to"));
  REQUIRE_THAT(
      refused([](EngineConfig& c) { c.role = Role::Decode, c.prefill_peers = {"a:1"}, c.kv_transfer_timeout_s = 0; }),
      Catch::Contains("--kv-transfer-timeout must be positive"));
  REQUIRE_THROWS_WITH(parse_choice<KvTransport>("udp"), "--kv-transport must be tcp or nccl, got 'udp'");
  REQUIRE_THAT(refused([](EngineConfig& c) { c.kv_transport = KvTransport::Nccl; }),
               Catch::Contains("--kv-transport applies only to --role prefill or decode"));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.role = Role::Prefill, c.kv_transport = KvTransport::Nccl; }),
               Catch::Contains("it needs --device cuda"));
}

TEST_CASE("actor engine: device flags are checked together", "[actors][cuda-host]") {
  auto refused = [](const std::function<void(EngineConfig&)>& change) {
    return refusal([&](EngineConfig& c) {
      c.threads = 0;  // --threads is a CPU flag
      change(c);
    });
  };
  const std::string cpu_only = "apply only to --device cuda";
  REQUIRE_THAT(refused([](EngineConfig& c) { c.dtype = WeightDtype::Bfloat16; }), Catch::Contains(cpu_only));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.gpu_memory_utilization = 0.5; }), Catch::Contains(cpu_only));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.enforce_eager = true; }), Catch::Contains(cpu_only));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.devices = {0}; }), Catch::Contains(cpu_only));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.max_cudagraph_capture_size = 8; }), Catch::Contains(cpu_only));
  REQUIRE_THROWS_WITH(parse_choice<DeviceKind>("tpu"), "--device must be cpu or cuda, got 'tpu'");
  REQUIRE_THAT(refused([](EngineConfig& c) { c.device = DeviceKind::Cuda, c.isa = cpu::Isa::Avx2; }),
               Catch::Contains("--isa and --threads apply only to --device cpu"));
  REQUIRE_THAT(refused([](EngineConfig& c) {
                 c.device = DeviceKind::Cuda, c.devices = {1, 1};
               }),
               Catch::Contains("each GPU id once"));
  REQUIRE_THAT(refused([](EngineConfig& c) {
                 c.device = DeviceKind::Cuda, c.devices = {0, 1}, c.data_parallel_size = 3;
               }),
               Catch::Contains("must equal the number of --devices"));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.data_parallel_size = 0; }), Catch::Contains("at least 1"));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.data_parallel_size = 2, c.role = Role::Prefill; }),
               Catch::Contains("--role colocated only"));
  REQUIRE_THAT(refused([](EngineConfig& c) { c.device = DeviceKind::Cuda, c.gpu_memory_utilization = 1.5; }),
               Catch::Contains("must be in (0, 1]"));
  REQUIRE_THAT(refused([](EngineConfig& c) {
                 c.device = DeviceKind::Cuda, c.gpu_memory_utilization = 0.5, c.scheduler.num_kv_blocks = 64;
               }),
               Catch::Contains("not both"));
  REQUIRE_THAT(refused([](EngineConfig& c) {
                 c.device = DeviceKind::Cuda,
                 c.speculative = SpeculativeConfig::parse(
                     R"({"method": "layer_skip", "num_speculative_tokens": 2, "draft_layers": 2})");
               }),
               Catch::Contains("with --device cuda use ngram"));
  // Here (no GPU, or no CUDA in the build) --device cuda itself is refused with the reason.
  std::string why;
  if (cuda::device_count(&why) == 0)
    REQUIRE_THAT(refused([](EngineConfig& c) { c.device = DeviceKind::Cuda; }), Catch::Contains(why));
  REQUIRE(refused([](EngineConfig& c) { c.dtype = WeightDtype::Float32; }) == "accepted");
}

TEST_CASE("actor engine: two data-parallel engines give the tokens one engine gives and label their metrics",
          "[actors]") {
  EngineConfig dp = stories_config();
  dp.threads = 1, dp.data_parallel_size = 2;
  auto one = EngineClient::start(stories_config());
  auto two = EngineClient::start(dp);
  const auto specs = specs_for(one->tokenizer(), 12, "d");
  const auto want = run(*one, specs);
  // One submission per request, all at once: they spread over both engines.
  std::vector<std::shared_ptr<CollectingSink>> sinks;
  for (const auto& s : specs) {
    sinks.push_back(std::make_shared<CollectingSink>());
    two->submit({s}, sinks.back());
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    REQUIRE(sinks[i]->wait(1));
    REQUIRE(sinks[i]->total.at(specs[i].req_id).token_ids == want.at(specs[i].req_id));
  }
  const std::string m = metrics_of(*two);
  for (const char* engine : {"0", "1"}) {
    std::smatch got;
    REQUIRE(std::regex_search(
        m, got,
        std::regex(std::string(R"(\nparley:prompt_tokens_total\{engine=")") + engine + R"("[^}]*\} ([0-9.e+]+))")));
    REQUIRE(std::stod(got[1]) > 0);  // each engine prefilled some of them
  }
  REQUIRE(m.find("# HELP parley:prompt_tokens_total") == m.rfind("# HELP parley:prompt_tokens_total"));
  // An abort reaches the engine holding the request.
  auto specs_long = specs_for(one->tokenizer(), 4, "x");
  std::vector<std::shared_ptr<CollectingSink>> long_sinks;
  for (auto& s : specs_long) {
    s.params.max_tokens = 400, s.params.ignore_eos = true;
    long_sinks.push_back(std::make_shared<CollectingSink>());
    two->submit({s}, long_sinks.back());
  }
  two->abort({"x0", "x1", "x2", "x3"});
  for (auto& sink : long_sinks) REQUIRE(sink->wait(1));
  for (size_t i = 0; i < specs_long.size(); ++i)
    REQUIRE(long_sinks[i]->total.at(specs_long[i].req_id).finish_reason == FinishReason::Abort);
}

}  // namespace parley

namespace parley {

TEST_CASE("actor engine: every actor counts the messages it handles and the step replies", "[actors]") {
  auto engine = EngineClient::start(stories_config());
  auto specs = specs_for(engine->tokenizer(), 1, "count");
  specs[0].params.max_tokens = 12;
  specs[0].params.ignore_eos = true;
  run(*engine, specs);
  const nlohmann::json view = idle_admin_view(*engine);
  const int64_t steps = view.at("steps").at("total");
  REQUIRE(steps >= 12);
  std::promise<std::string> p;
  engine->admin_actors([&p](const auto& v) { p.set_value(http::admin_actors_json(v)); });
  std::map<std::string, int64_t> handled;
  const std::string text = p.get_future().get();
  INFO(text);
  const nlohmann::json actors = nlohmann::json::parse(text);  // kept: a range-for over a temporary's member dangles
  for (const auto& a : actors.at("actors"))
    handled[a.at("name").get<std::string>()] = a.at("messages_handled").get<int64_t>();
  CHECK(handled.size() == 5);
  // The worker: each step's execute, and the stats query. The scheduler: the submit, each step's reply (a
  // request's reply counts too), the admin view's query and the stats query.
  CHECK(handled.at("worker") >= steps + 1);
  CHECK(handled.at("scheduler") >= steps + 3);
  CHECK(handled.at("ingress") >= 2);  // the submit and this query
  CHECK(handled.at("output") >= 12 / 4);
  CHECK(handled.at("admin") >= 1);
}

}  // namespace parley
