// Where a step's time goes (bench_async_scheduling's profile table): a total and a count per phase, and
// the send stamps the next hop's receiver subtracts. Each phase is written by the one thread that runs it,
// with relaxed atomics; a reader takes them once the engine is idle. Off unless an engine is handed one.
#pragma once
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>

#include "engine/clock.hpp"

namespace parley {

enum class StepPhase {
  Schedule,          // Scheduler::schedule()
  Update,            // Scheduler::update_from_output()
  SchedulerCpu,      // the scheduler thread's CPU time on a step's replies (update, outputs, next step planned)
  HopToWorker,       // a step sent to the worker starting, when the worker was waiting for it
  WorkerIdle,        // the worker waiting between steps
  Prepare,           // the worker's persistent batch and forward inputs
  Forward,           // the forward pass
  Sample,            // sampling and what follows it on the worker
  HopToScheduler,    // the worker's reply reaching the scheduler
  HopToOutput,       // a step's outputs reaching the output actor
  OutputProcessing,  // detokenize, stop strings, sinks
  Count
};

class StepProfile {
 public:
  static double now() { return now_seconds(); }
  // CPU time of the calling thread (not inflated when other processes take the core).
  static double thread_cpu() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
  }

  void add(StepPhase phase, double seconds) {
    auto& p = phases_[size_t(phase)];
    p.seconds.store(p.seconds.load(std::memory_order_relaxed) + seconds, std::memory_order_relaxed);
    p.count.store(p.count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  double seconds(StepPhase phase) const { return phases_[size_t(phase)].seconds.load(std::memory_order_relaxed); }
  uint64_t count(StepPhase phase) const { return phases_[size_t(phase)].count.load(std::memory_order_relaxed); }
  void reset() {
    for (auto& p : phases_) p.seconds = 0, p.count = 0;
    for (auto& ring : stamps_)
      for (auto& s : ring) s = 0;
    first_compute = 0, first_admission = 0, worker_free_at = 0;
  }
  // Send stamps, by step id or message number (a few in flight at most): the receiver subtracts them.
  enum class Hop { ToWorker, ToScheduler, ToOutput, Count };
  void sent(Hop hop, uint64_t key) { stamps_[size_t(hop)][key % kRing].store(now(), std::memory_order_relaxed); }
  // Adds now minus the stamp (or minus `not_before`, when later: the receiver was busy until then) to `phase`.
  void received(Hop hop, uint64_t key, StepPhase phase, double not_before = 0) {
    const double at = stamps_[size_t(hop)][key % kRing].load(std::memory_order_relaxed);
    if (at > 0) add(phase, now() - std::max(at, not_before));
  }
  // The worker takes step `step_id`: how long it waited since its last step, and for the step to arrive.
  void worker_starts(uint64_t step_id) {
    const double at = now(), free_at = worker_free_at.load(std::memory_order_relaxed);
    if (free_at > 0) add(StepPhase::WorkerIdle, at - free_at);
    received(Hop::ToWorker, step_id, StepPhase::HopToWorker, free_at);
    computing(at);
  }
  void worker_ends(uint64_t step_id) {
    worker_free_at.store(now(), std::memory_order_relaxed);
    sent(Hop::ToScheduler, step_id);
  }
  // When the first step after reset() started computing (the idle engine's start-to-compute latency).
  void computing(double at) { first_stamp(first_compute, at); }
  // When the scheduler first took a submission after reset() (the idle engine's hop from the submitting thread).
  void admitting(double at) { first_stamp(first_admission, at); }
  std::atomic<double> first_compute{0};
  std::atomic<double> first_admission{0};
  std::atomic<double> worker_free_at{0};  // when the worker finished its last step (0: none since reset)

 private:
  static void first_stamp(std::atomic<double>& stamp, double at) {
    double none = 0;
    stamp.compare_exchange_strong(none, at, std::memory_order_relaxed);
  }
  struct Phase {
    std::atomic<double> seconds{0};
    std::atomic<uint64_t> count{0};
  };
  static constexpr size_t kRing = 16;
  std::array<Phase, size_t(StepPhase::Count)> phases_;
  std::array<std::array<std::atomic<double>, kRing>, size_t(Hop::Count)> stamps_{};
};

// Adds the time from construction to destruction to a phase (wall time, or the thread's CPU time); nothing
// without a profile.
class PhaseTimer {
 public:
  enum class Clock { Wall, ThreadCpu };
  PhaseTimer(StepProfile* profile, StepPhase phase, Clock clock = Clock::Wall)
      : profile_(profile), phase_(phase), clock_(clock), start_(profile ? read() : 0) {}
  ~PhaseTimer() {
    if (profile_) profile_->add(phase_, read() - start_);
  }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  double read() const { return clock_ == Clock::Wall ? StepProfile::now() : StepProfile::thread_cpu(); }
  StepProfile* profile_;
  StepPhase phase_;
  Clock clock_;
  double start_;
};

}  // namespace parley
