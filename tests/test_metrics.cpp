// The Prometheus registry's exact text exposition, and ServingMetrics' vLLM-named metrics.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <string>

#include "http/prometheus.hpp"
#include "http/serving_metrics.hpp"

using namespace parley;

TEST_CASE("sample values are written as Prometheus' Python client writes them", "[metrics]") {
  CHECK(prom::format_value(3) == "3.0");
  CHECK(prom::format_value(-2) == "-2.0");
  CHECK(prom::format_value(0) == "0.0");
  CHECK(prom::format_value(0.25) == "0.25");
  CHECK(prom::format_value(0.001) == "0.001");
  CHECK(prom::format_value(1e-5) == "1e-05");
  CHECK(prom::format_value(123456.5) == "123456.5");
  CHECK(prom::format_value(1e15) == "1000000000000000.0");
  CHECK(prom::format_value(1e20) == "1e+20");
  CHECK(prom::format_value(INFINITY) == "+Inf");
  CHECK(prom::format_value(-INFINITY) == "-Inf");
  CHECK(prom::format_value(NAN) == "NaN");
}

TEST_CASE("a counter renders HELP, TYPE and its value", "[metrics]") {
  prom::Registry r;
  auto& c = r.counter("parley:requests_total", "Requests seen.\nBackslash \\ too.");
  CHECK(r.render() ==
        "# HELP parley:requests_total Requests seen.\\nBackslash \\\\ too.\n"
        "# TYPE parley:requests_total counter\n"
        "parley:requests_total 0.0\n");
  c.get().inc();
  c.get().inc(2.5);
  CHECK(c.get().value() == 3.5);
  CHECK(r.render() ==
        "# HELP parley:requests_total Requests seen.\\nBackslash \\\\ too.\n"
        "# TYPE parley:requests_total counter\n"
        "parley:requests_total 3.5\n");
  CHECK_THROWS_AS(c.get().inc(-1), std::invalid_argument);
  c.get().set(7);  // mirrored from a cumulative total
  CHECK(c.get().value() == 7);
}

TEST_CASE("a labelled counter renders one sorted line per child with escaped values", "[metrics]") {
  prom::Registry r;
  auto& c = r.counter("x_total", "X.", {"model_name", "finished_reason"});
  CHECK(r.render() == "# HELP x_total X.\n# TYPE x_total counter\n");  // no child yet
  c.labels({"m\"1\\\n", "stop"}).inc(2);
  c.labels({"a", "length"}).inc();
  c.labels({"a", "length"}).inc();
  CHECK(r.render() ==
        "# HELP x_total X.\n"
        "# TYPE x_total counter\n"
        "x_total{model_name=\"a\",finished_reason=\"length\"} 2.0\n"
        "x_total{model_name=\"m\\\"1\\\\\\n\",finished_reason=\"stop\"} 2.0\n");
  CHECK_THROWS_WITH(c.labels({"a"}), "x_total takes 2 label values, got 1");
}

TEST_CASE("a gauge goes up and down", "[metrics]") {
  prom::Registry r;
  auto& g = r.gauge("parley:num_requests_running", "Running.", {"model_name"}).labels({"m"});
  g.set(4);
  g.inc();
  g.dec(2);
  CHECK(r.render() ==
        "# HELP parley:num_requests_running Running.\n"
        "# TYPE parley:num_requests_running gauge\n"
        "parley:num_requests_running{model_name=\"m\"} 3.0\n");
}

TEST_CASE("a histogram renders cumulative buckets, +Inf, _count and _sum", "[metrics]") {
  prom::Registry r;
  auto& h = r.histogram("lat_seconds", "Latency.", {0.125, 0.5, 1.0}, {"model_name"}).labels({"m"});
  for (double v : {0.0625, 0.125, 0.25, 2.0}) h.observe(v);  // 0.125 lands in le="0.125": le is inclusive
  CHECK(h.bucket_counts() == std::vector<uint64_t>{2, 1, 0, 1});
  CHECK(r.render() ==
        "# HELP lat_seconds Latency.\n"
        "# TYPE lat_seconds histogram\n"
        "lat_seconds_bucket{model_name=\"m\",le=\"0.125\"} 2.0\n"
        "lat_seconds_bucket{model_name=\"m\",le=\"0.5\"} 3.0\n"
        "lat_seconds_bucket{model_name=\"m\",le=\"1.0\"} 3.0\n"
        "lat_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 4.0\n"
        "lat_seconds_count{model_name=\"m\"} 4.0\n"
        "lat_seconds_sum{model_name=\"m\"} 2.4375\n");

  prom::Registry plain;
  plain.histogram("h", "H.", {1.0}).get().observe(0.5);
  CHECK(plain.render() ==
        "# HELP h H.\n# TYPE h histogram\n"
        "h_bucket{le=\"1.0\"} 1.0\nh_bucket{le=\"+Inf\"} 1.0\nh_count 1.0\nh_sum 0.5\n");
}

TEST_CASE("the registry refuses bad names, duplicates and bad buckets", "[metrics]") {
  prom::Registry r;
  r.counter("a:b_total", "ok");
  CHECK_THROWS_WITH(r.gauge("a:b_total", "again"), "metric a:b_total registered twice");
  CHECK_THROWS_AS(r.counter("1abc", "x"), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("a-b", "x"), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("ok2", "x", {"a:b"}), std::invalid_argument);
  CHECK_THROWS_AS(r.counter("ok3", "x", {"__reserved"}), std::invalid_argument);
  CHECK_THROWS_WITH(r.histogram("h1", "x", {1.0}, {"le"}), "histogram h1 cannot take the label 'le'");
  CHECK_THROWS_AS(r.histogram("h2", "x", {1.0, 1.0}), std::invalid_argument);
  CHECK_THROWS_AS(r.histogram("h3", "x", {1.0, INFINITY}), std::invalid_argument);
  CHECK(r.render() == "# HELP a:b_total ok\n# TYPE a:b_total counter\na:b_total 0.0\n");
}

TEST_CASE("a pooling request's vector counts the request and its prompt tokens", "[metrics]") {
  ServingMetrics m("stories");
  m.on_pooled(12);
  m.on_pooled(5);
  const std::string text = m.render();
  CHECK_THAT(text, Catch::Contains("parley:pooling_requests_total{model_name=\"stories\"} 2.0\n"));
  CHECK_THAT(text, Catch::Contains("parley:prompt_tokens_total{model_name=\"stories\"} 17.0\n"));
  CHECK_THAT(text, Catch::Contains("parley:pooling_prompt_tokens_total{model_name=\"stories\"} 17.0\n"));
}

TEST_CASE("ServingMetrics exposes vLLM's metric names under parley:", "[metrics]") {
  ServingMetrics m("stories");
  const std::string text = m.render();
  const std::vector<std::pair<std::string, std::string>> families = {
      {"parley:num_requests_running", "gauge"},
      {"parley:num_requests_waiting", "gauge"},
      {"parley:kv_cache_usage_perc", "gauge"},
      {"parley:prefix_cache_queries_total", "counter"},
      {"parley:prefix_cache_hits_total", "counter"},
      {"parley:num_preemptions_total", "counter"},
      {"parley:prompt_tokens_total", "counter"},
      {"parley:generation_tokens_total", "counter"},
      {"parley:pooling_requests_total", "counter"},
      {"parley:pooling_prompt_tokens_total", "counter"},
      {"parley:request_success_total", "counter"},
      {"parley:time_to_first_token_seconds", "histogram"},
      {"parley:inter_token_latency_seconds", "histogram"},
      {"parley:e2e_request_latency_seconds", "histogram"},
      {"parley:prefill_tokens_computed_total", "counter"},
      {"parley:request_params_n", "histogram"},
      {"parley:parallel_sampling_splits_total", "counter"},
      {"parley:engine_steps_total", "counter"},
      {"parley:discarded_tokens_total", "counter"},
      {"parley:cuda_graph_replays_total", "counter"},
      {"parley:eager_steps_total", "counter"},
      {"parley:spec_decode_num_drafts_total", "counter"},
      {"parley:spec_decode_num_draft_tokens_total", "counter"},
      {"parley:spec_decode_num_accepted_tokens_total", "counter"},
      {"parley:spec_decode_num_accepted_tokens_per_pos_total", "counter"},
      {"parley:spec_decode_mean_acceptance_length", "gauge"},
      {"parley:decode_steps_total", "counter"},
      {"parley:uniform_decode_steps_total", "counter"},
      {"parley:kv_blocks_transferred_total", "counter"},
      {"parley:kv_transfer_bytes_total", "counter"},
      {"parley:kv_transfer_failures_total", "counter"},
      {"parley:kv_peer_auth_failures_total", "counter"},
      {"parley:kv_transfer_latency_seconds", "histogram"},
      {"parley:structured_output_requests_total", "counter"},
      {"parley:structured_output_masks_total", "counter"},
      {"parley:structured_output_mask_seconds_total", "counter"},
      {"parley:structured_output_mask_computations_total", "counter"},
      {"parley:structured_output_mask_prefetches_total", "counter"},
      {"parley:engine_step_failures_total", "counter"},
  };
  for (const auto& [name, type] : families) CHECK_THAT(text, Catch::Contains("# TYPE " + name + " " + type + "\n"));
  CHECK_THAT(text,
             Catch::Contains("parley:request_success_total{model_name=\"stories\",finished_reason=\"abort\"} 0.0\n"
                             "parley:request_success_total{model_name=\"stories\",finished_reason=\"length\"} 0.0\n"
                             "parley:request_success_total{model_name=\"stories\",finished_reason=\"stop\"} 0.0\n"));
  // vLLM's bucket bounds: 22 for TTFT, 19 for ITL, 21 for e2e, each plus +Inf.
  auto count = [&](const std::string& s) {
    std::size_t n = 0;
    for (std::size_t p = text.find(s); p != std::string::npos; p = text.find(s, p + 1)) ++n;
    return n;
  };
  CHECK(count("parley:time_to_first_token_seconds_bucket{") == 23);
  CHECK(count("parley:inter_token_latency_seconds_bucket{") == 20);
  CHECK(count("parley:e2e_request_latency_seconds_bucket{") == 22);
  CHECK(count("parley:kv_transfer_latency_seconds_bucket{") == 23);  // TTFT's bounds
  CHECK(count("# HELP ") == families.size());
  m.set_kv_transfers(17, 327819, 2);
  m.on_kv_transfer_latency(0.03);
  SamplingParams constrained;
  constrained.structured_outputs = StructuredOutputsParams{StructuredOutputsParams::Kind::Regex, "a+"};
  m.on_request(constrained);
  m.on_request(constrained);
  m.on_request(SamplingParams{});
  const std::string after = m.render();
  CHECK_THAT(after,
             Catch::Contains("parley:structured_output_requests_total{model_name=\"stories\",kind=\"regex\"} 2.0\n"));
  CHECK_THAT(after, Catch::Contains("parley:kv_blocks_transferred_total{model_name=\"stories\"} 17.0\n"));
  CHECK_THAT(after, Catch::Contains("parley:kv_transfer_bytes_total{model_name=\"stories\"} 327819.0\n"));
  CHECK_THAT(after, Catch::Contains("parley:kv_transfer_failures_total{model_name=\"stories\"} 2.0\n"));
  CHECK_THAT(after,
             Catch::Contains("parley:kv_transfer_latency_seconds_bucket{model_name=\"stories\",le=\"0.04\"} 1.0\n"));
  CHECK_THAT(after,
             Catch::Contains("parley:kv_transfer_latency_seconds_bucket{model_name=\"stories\",le=\"0.02\"} 0.0\n"));
}

TEST_CASE("ServingMetrics records the scheduler snapshot and request events", "[metrics]") {
  ServingMetrics m("stories");
  m.set_num_requests_running(3);
  m.set_num_requests_waiting(1);
  m.set_kv_cache_usage(0.5);
  m.set_prefix_cache_totals(64, 32);
  m.set_num_preemptions(2);
  m.set_prefill_tokens_computed(96);
  m.on_first_token(0.003, 10);
  m.on_generated_tokens(1);
  m.on_token(0.02);
  m.on_generated_tokens(1);
  m.on_token(0.02);
  m.on_generated_tokens(3);
  m.on_finished(FinishReason::Stop, 1.2);
  m.on_finished(FinishReason::Abort, 0.1);  // aborted before its first token: its prompt is not counted
  CHECK_THROWS_AS(m.on_finished(FinishReason::None, 1), std::invalid_argument);
  const std::string text = m.render();
  for (const char* line : {
           "parley:num_requests_running{model_name=\"stories\"} 3.0\n",
           "parley:num_requests_waiting{model_name=\"stories\"} 1.0\n",
           "parley:kv_cache_usage_perc{model_name=\"stories\"} 0.5\n",
           "parley:prefix_cache_queries_total{model_name=\"stories\"} 64.0\n",
           "parley:prefix_cache_hits_total{model_name=\"stories\"} 32.0\n",
           "parley:num_preemptions_total{model_name=\"stories\"} 2.0\n",
           "parley:prefill_tokens_computed_total{model_name=\"stories\"} 96.0\n",
           "parley:prompt_tokens_total{model_name=\"stories\"} 10.0\n",
           "parley:generation_tokens_total{model_name=\"stories\"} 5.0\n",
           "parley:request_success_total{model_name=\"stories\",finished_reason=\"abort\"} 1.0\n"
           "parley:request_success_total{model_name=\"stories\",finished_reason=\"length\"} 0.0\n"
           "parley:request_success_total{model_name=\"stories\",finished_reason=\"stop\"} 1.0\n",
           "parley:time_to_first_token_seconds_bucket{model_name=\"stories\",le=\"0.001\"} 0.0\n"
           "parley:time_to_first_token_seconds_bucket{model_name=\"stories\",le=\"0.005\"} 1.0\n",
           "parley:time_to_first_token_seconds_bucket{model_name=\"stories\",le=\"+Inf\"} 1.0\n"
           "parley:time_to_first_token_seconds_count{model_name=\"stories\"} 1.0\n"
           "parley:time_to_first_token_seconds_sum{model_name=\"stories\"} 0.003\n",
           "parley:inter_token_latency_seconds_bucket{model_name=\"stories\",le=\"0.01\"} 0.0\n"
           "parley:inter_token_latency_seconds_bucket{model_name=\"stories\",le=\"0.025\"} 2.0\n",
           "parley:inter_token_latency_seconds_sum{model_name=\"stories\"} 0.04\n",
           "parley:e2e_request_latency_seconds_bucket{model_name=\"stories\",le=\"1.0\"} 1.0\n"
           "parley:e2e_request_latency_seconds_bucket{model_name=\"stories\",le=\"1.5\"} 2.0\n",
           "parley:e2e_request_latency_seconds_bucket{model_name=\"stories\",le=\"7680.0\"} 2.0\n"
           "parley:e2e_request_latency_seconds_bucket{model_name=\"stories\",le=\"+Inf\"} 2.0\n"
           "parley:e2e_request_latency_seconds_count{model_name=\"stories\"} 2.0\n",
       })
    CHECK_THAT(text, Catch::Contains(line));
}

TEST_CASE("data-parallel engines' metrics merge into one family each with an engine label", "[metrics]") {
  const std::string a =
      "# HELP x_total Things.\n# TYPE x_total counter\nx_total{model_name=\"m\"} 1.0\n"
      "# HELP g Level.\n# TYPE g gauge\ng 0.5\n";
  const std::string b =
      "# HELP x_total Things.\n# TYPE x_total counter\nx_total{model_name=\"m\"} 2.0\n"
      "# HELP g Level.\n# TYPE g gauge\ng 0.25\n";
  REQUIRE(prom::merge_engine_metrics({a, b}) ==
          "# HELP x_total Things.\n# TYPE x_total counter\nx_total{engine=\"0\",model_name=\"m\"} 1.0\n"
          "x_total{engine=\"1\",model_name=\"m\"} 2.0\n"
          "# HELP g Level.\n# TYPE g gauge\ng{engine=\"0\"} 0.5\ng{engine=\"1\"} 0.25\n");
  REQUIRE_THROWS_AS(prom::merge_engine_metrics({a, "# HELP y Other.\n# TYPE y gauge\ny 1.0\n"}), std::invalid_argument);
}
