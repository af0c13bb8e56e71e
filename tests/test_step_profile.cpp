// The step profile (engine/step_profile.hpp) behind bench_async_scheduling's table: phases add up, a hop
// counts only the time its receiver was free, and the actor engine times every step at each hop.
#include <catch2/catch.hpp>

#include <thread>

#include "engine_client_util.hpp"
#include "engine/step_profile.hpp"

namespace parley {

TEST_CASE("step profile: phases add their time and reset clears them", "[profile]") {
  StepProfile p;
  p.add(StepPhase::Forward, 0.25);
  p.add(StepPhase::Forward, 0.5);
  { PhaseTimer t(&p, StepPhase::Sample); }
  { PhaseTimer t(nullptr, StepPhase::Sample); }  // no profile: nothing to time
  REQUIRE(p.seconds(StepPhase::Forward) == 0.75);
  REQUIRE(p.count(StepPhase::Forward) == 2);
  REQUIRE(p.count(StepPhase::Sample) == 1);
  p.computing(5.0);
  p.computing(7.0);  // only the first step after a reset counts
  REQUIRE(p.first_compute.load() == 5.0);
  p.reset();
  REQUIRE(p.count(StepPhase::Forward) == 0);
  REQUIRE(p.seconds(StepPhase::Forward) == 0);
  REQUIRE(p.first_compute.load() == 0);
}

TEST_CASE("step profile: a hop counts from its stamp or from when the receiver became free if later", "[profile]") {
  StepProfile p;
  p.received(StepProfile::Hop::ToWorker, 3, StepPhase::HopToWorker);
  REQUIRE(p.count(StepPhase::HopToWorker) == 0);  // never sent: nothing to count
  p.sent(StepProfile::Hop::ToWorker, 3);
  const double sent = StepProfile::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  p.received(StepProfile::Hop::ToWorker, 3, StepPhase::HopToWorker, sent + 0.015);  // busy until 15 ms after the send
  REQUIRE(p.count(StepPhase::HopToWorker) == 1);
  REQUIRE(p.seconds(StepPhase::HopToWorker) >= 0.004);
  REQUIRE(p.seconds(StepPhase::HopToWorker) < 0.015);
}

TEST_CASE("actor engine: the step profile times every step at each hop", "[profile][actors]") {
  EngineConfig config = stories_config();
  config.profile = std::make_shared<StepProfile>();
  auto engine = EngineClient::start(config);
  const double submitted = StepProfile::now();
  const auto ids = run(*engine, specs_for(engine->tokenizer(), 4, "p"));
  REQUIRE(ids.size() == 4);
  idle_admin_view(*engine);  // the last step (dropping finished requests) is back, and its counters sent
  const StepProfile& p = *config.profile;
  const auto steps = uint64_t(metric(metrics_of(*engine), "parley:engine_steps_total"));
  REQUIRE(steps > 30);
  // Each step sent reaches the worker and its output comes back: one count per step at each.
  REQUIRE(p.count(StepPhase::HopToWorker) == steps);
  REQUIRE(p.count(StepPhase::Prepare) == steps);
  REQUIRE(p.count(StepPhase::HopToScheduler) == steps);
  REQUIRE(p.count(StepPhase::Update) == steps);
  REQUIRE(p.count(StepPhase::WorkerIdle) == steps - 1);  // not before the first
  REQUIRE(p.count(StepPhase::Forward) > 30);
  REQUIRE(p.count(StepPhase::Forward) <= steps);  // a step that only drops finished requests runs no pass
  REQUIRE(p.count(StepPhase::HopToOutput) == p.count(StepPhase::OutputProcessing));
  REQUIRE(p.count(StepPhase::OutputProcessing) > 30);
  REQUIRE(p.first_compute.load() > submitted);
  REQUIRE(p.seconds(StepPhase::Forward) > 0);
  REQUIRE(p.seconds(StepPhase::SchedulerCpu) > 0);
}

}  // namespace parley
