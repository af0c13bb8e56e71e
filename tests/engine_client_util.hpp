// Driving an EngineClient from a test: a sink that collects outputs, the stories260K configuration, request
// specs, metrics and idle checks.
#pragma once
#include <catch2/catch.hpp>

#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "http/admin_json.hpp"
#include "engine/engine_client.hpp"
#include "engine/engine_config.hpp"
#include "model/tokenizer.hpp"
#include "test_support.hpp"

namespace parley {

// Collects every request's tokens and finish; wait() blocks until `expected` requests finished.
struct CollectingSink : RequestSink {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, RequestOutput> total;  // concatenated per request id
  int finished = 0, rejected_status = 0;
  std::string rejected_message;
  std::function<void(const RequestOutput&)> on_each;

  void on_output(const RequestOutput& o) override {
    std::lock_guard lock(mu);
    RequestOutput& t = total[o.req_id];
    t.req_id = o.req_id;
    t.text += o.text;
    t.token_ids.insert(t.token_ids.end(), o.token_ids.begin(), o.token_ids.end());
    t.finish_reason = o.finish_reason;
    t.stop_reason = o.stop_reason;
    t.error = o.error;
    if (o.finished()) ++finished;
    if (on_each) on_each(o);
    cv.notify_all();
  }
  void on_rejected(int status, const std::string& message) override {
    std::lock_guard lock(mu);
    rejected_status = status, rejected_message = message;
    cv.notify_all();
  }
  bool wait(int expected) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(60), [&] { return finished >= expected || rejected_status != 0; });
  }
};

inline EngineConfig stories_config(int num_kv_blocks = 0) {
  EngineConfig c;
  c.model_path = test::shared_model("stories260K.bin");
  c.tokenizer_path = test::shared_model("tok512.bin");
  c.threads = 2;
  c.scheduler.num_kv_blocks = num_kv_blocks;
  c.scheduler.max_num_batched_tokens = 256;
  return c;
}

inline std::vector<EngineRequestSpec> specs_for(const Tokenizer& tok, int count, const std::string& prefix) {
  std::vector<EngineRequestSpec> specs;
  const char* starts[] = {"Once upon a time", "The cat", "Lily and Ben went", "One day, a big dog"};
  for (int i = 0; i < count; ++i) {
    EngineRequestSpec s;
    s.req_id = prefix + std::to_string(i);
    s.prompt_token_ids = tok.encode(starts[i % 4], true);
    s.params.temperature = i % 3 == 0 ? 0.0f : 0.8f;
    s.params.seed = uint64_t(100 + i);
    s.params.max_tokens = 24 + (i % 5) * 8;
    s.params.ignore_eos = i % 2 == 0;
    specs.push_back(std::move(s));
  }
  return specs;
}

// The value of a metric line `name{model_name="..."} value`, or -1.
inline double metric(const std::string& text, const std::string& name) {
  std::smatch m;
  if (std::regex_search(text, m, std::regex("\n" + name + "\\{[^}]*\\} ([0-9.e+-]+)"))) return std::stod(m[1]);
  return -1;
}

inline std::string metrics_of(EngineClient& engine) {
  std::promise<std::string> p;
  auto f = p.get_future();
  engine.metrics([&p](std::string text) { p.set_value(std::move(text)); });
  return "\n" + f.get();
}

// Polls until no request is running or waiting and every block is free (the abort path is asynchronous).
inline void require_idle(EngineClient& engine) {
  std::string m;
  for (int i = 0; i < 200; ++i) {
    m = metrics_of(engine);
    if (metric(m, "parley:num_requests_running") == 0 && metric(m, "parley:num_requests_waiting") == 0 &&
        metric(m, "parley:kv_cache_usage_perc") == 0)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL("engine not idle: " << m);
}

// The scheduler's own view once it is idle: no request live, no step in flight, nothing left to tell the worker.
inline nlohmann::json idle_admin_view(EngineClient& engine) {
  for (int i = 0; i < 200; ++i) {
    std::promise<std::string> p;
    engine.admin_requests([&p](const auto& v) { p.set_value(http::admin_requests_json(v)); });
    auto view = nlohmann::json::parse(p.get_future().get());
    const auto& steps = view.at("steps");
    if (view.at("requests").empty() && steps.at("in_flight").empty() && !steps.at("worker_news_pending")) return view;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL("the scheduler did not go idle");
  return {};
}

inline std::map<std::string, std::vector<int>> run(EngineClient& engine, std::vector<EngineRequestSpec> specs) {
  auto sink = std::make_shared<CollectingSink>();
  int n = 0;  // engine requests that finish: an n-sample request's children each
  for (const auto& s : specs) n += std::max<int>(1, int(s.child_req_ids.size()));
  engine.submit(std::move(specs), sink);
  REQUIRE(sink->wait(n));
  INFO(sink->rejected_message);
  REQUIRE(sink->rejected_status == 0);
  std::map<std::string, std::vector<int>> ids;
  for (auto& [id, out] : sink->total) ids[id] = out.token_ids;
  return ids;
}

}  // namespace parley
