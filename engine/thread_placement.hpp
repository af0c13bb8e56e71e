// Where an engine's threads run. The worker computes on CPUs of its own and the actor threads (scheduler, output,
// ingress) run on the rest: a message that wakes an actor thread otherwise often lands it on the computing CPU,
// which then waits for it (bench_async_scheduling at 1 request: 20-36 us lost per step, 6 us pinned).
#pragma once
#include <chrono>
#include <functional>
#include <vector>

namespace parley {

struct ThreadPlacement {
  std::vector<int> compute;  // the worker thread and its OpenMP team (empty: not pinned)
  std::vector<int> service;  // the actor threads
  bool pinned() const { return !compute.empty(); }
};

// Engine `engine` of `engines` (data parallelism) with compute_threads each, on the CPUs in `allowed`: each engine
// takes its own CPUs from the end of the list, the actor threads the CPUs before them. Nothing pinned when no CPU
// would be left for the actor threads.
ThreadPlacement place_threads(const std::vector<int>& allowed, int compute_threads, int engine = 0, int engines = 1);

std::vector<int> allowed_cpus();  // the CPUs this process may run on (sched_getaffinity)
// Restricts the calling thread to `cpus` (nothing when empty); false, changing nothing, when the system refuses.
bool pin_this_thread(const std::vector<int>& cpus);

// Spins (with the CPU's pause hint) until ready() or `budget` has passed; says whether ready() came true. A thread
// on CPUs of its own uses it to stay awake for a message it expects shortly, rather than sleep and be woken.
bool spin_until(const std::function<bool()>& ready, std::chrono::microseconds budget);

}  // namespace parley
