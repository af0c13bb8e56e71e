// The output actor's plain class without CAF: outputs reach the right sink, a stop string is reported
// back for the scheduler, aborts give a final `abort` output, and the metrics count what happened.
#include <catch2/catch.hpp>

#include "actors/output_service.hpp"
#include "model/tokenizer.hpp"
#include "test_support.hpp"

namespace parley {
namespace {

struct RecordingSink : RequestSink {
  std::vector<RequestOutput> outputs;
  void on_output(const RequestOutput& o) override { outputs.push_back(o); }
  void on_rejected(int, const std::string&) override { FAIL("no refusal expected"); }
};

Request request(const std::string& id, const Tokenizer& tok, std::vector<std::string> stop = {}) {
  SamplingParams p;
  p.max_tokens = 50;
  p.stop = std::move(stop);
  return Request(id, tok.encode("Once upon a time", true), p, 1, 10.0);
}

EngineCoreOutput step(const std::string& id, std::vector<int> tokens, FinishReason finish = FinishReason::None) {
  EngineCoreOutput o;
  o.req_id = id;
  o.new_token_ids = std::move(tokens);
  o.finish_reason = finish;
  return o;
}

std::string text_of(const std::vector<RequestOutput>& outs) {
  std::string s;
  for (const auto& o : outs) s += o.text;
  return s;
}

}  // namespace

TEST_CASE("output service routes deltas to their sinks and reports stop strings to the scheduler", "[output_service]") {
  const Tokenizer tok(read_llama2c_tokenizer(test::shared_model("tok512.bin"), 512));
  OutputService service(tok, "m");
  auto a = std::make_shared<RecordingSink>(), b = std::make_shared<RecordingSink>();
  service.register_requests({request("a", tok), request("b", tok, {"girl"})}, a, 10.0);
  service.register_requests({request("c", tok)}, b, 10.0);
  REQUIRE(service.num_live() == 3);
  // ", there was a little girl named Lily" is the model's greedy continuation; feed its ids.
  const std::vector<int> ids = tok.encode(", there was a little girl named Lily", false);
  std::vector<std::string> stopped;
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool last = i + 1 == ids.size();
    auto s =
        service.on_outputs({step("a", {ids[i]}, last ? FinishReason::Length : FinishReason::None), step("b", {ids[i]})},
                           10.5 + 0.1 * double(i));
    stopped.insert(stopped.end(), s.begin(), s.end());
  }
  REQUIRE(stopped == std::vector<std::string>{"b"});  // the scheduler must drop b
  std::vector<RequestOutput> a_outs, b_outs;
  for (const auto& o : a->outputs) (o.req_id == "a" ? a_outs : b_outs).push_back(o);
  const std::string full = tok.decode(ids, request("x", tok).prompt_token_ids.back());
  REQUIRE(full == " , there was a little girl named Lily");  // SentencePiece's dummy prefix space
  REQUIRE(text_of(a_outs) == full);
  REQUIRE(a_outs.back().finish_reason == FinishReason::Length);
  REQUIRE(text_of(b_outs) == " , there was a little ");
  REQUIRE(b_outs.back().finish_reason == FinishReason::Stop);
  REQUIRE(std::get<std::string>(b_outs.back().stop_reason) == "girl");
  REQUIRE(b->outputs.empty());

  service.on_aborted({"c", "a", "unknown"}, 12.0);  // only c is still live
  REQUIRE(b->outputs.size() == 1);
  REQUIRE(b->outputs[0].finish_reason == FinishReason::Abort);
  REQUIRE(service.num_live() == 0);

  SchedulerStats stats;
  stats.num_running = 2, stats.prefill_tokens_computed = 42;
  service.on_stats(stats);
  const std::string m = service.render_metrics();
  REQUIRE_THAT(m, Catch::Contains("parley:num_requests_running{model_name=\"m\"} 2.0"));
  REQUIRE_THAT(m, Catch::Contains("parley:prefill_tokens_computed_total{model_name=\"m\"} 42.0"));
  REQUIRE_THAT(m, Catch::Contains("parley:request_success_total{model_name=\"m\",finished_reason=\"abort\"} 1.0"));
  REQUIRE_THAT(m, Catch::Contains("parley:request_success_total{model_name=\"m\",finished_reason=\"stop\"} 1.0"));
  REQUIRE_THAT(m, Catch::Contains("parley:request_success_total{model_name=\"m\",finished_reason=\"length\"} 1.0"));
  REQUIRE_THAT(m, Catch::Contains("parley:time_to_first_token_seconds_count{model_name=\"m\"} 2.0"));  // a and b
  REQUIRE_THAT(m, Catch::Contains("parley:prompt_tokens_total{model_name=\"m\"} 10.0"));  // a and b; c never started
  size_t b_tokens = 0;
  for (const auto& o : b_outs) b_tokens += o.token_ids.size();
  REQUIRE(b_tokens < ids.size());
  REQUIRE_THAT(m, Catch::Contains("parley:generation_tokens_total{model_name=\"m\"} " +
                                  std::to_string(ids.size() + b_tokens) + ".0"));
}

}  // namespace parley
