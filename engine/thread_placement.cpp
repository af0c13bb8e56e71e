#include "engine/thread_placement.hpp"

#include <sched.h>

#include <stdexcept>

namespace parley {

ThreadPlacement place_threads(const std::vector<int>& allowed, int compute_threads, int engine, int engines) {
  if (compute_threads < 1 || engines < 1 || engine < 0 || engine >= engines)
    throw std::invalid_argument("place_threads: engine " + std::to_string(engine) + " of " + std::to_string(engines) +
                                " with " + std::to_string(compute_threads) + " compute threads");
  ThreadPlacement p;
  const size_t computing = size_t(compute_threads) * size_t(engines);
  if (allowed.size() <= computing) return p;  // every CPU computes: nowhere else for the actor threads
  const size_t first = allowed.size() - size_t(compute_threads) * size_t(engine + 1);
  p.compute.assign(allowed.begin() + long(first), allowed.begin() + long(first) + compute_threads);
  p.service.assign(allowed.begin(), allowed.end() - long(computing));
  return p;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

bool pin_this_thread(const std::vector<int>& cpus) {
  if (cpus.empty()) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

bool spin_until(const std::function<bool()>& ready, std::chrono::microseconds budget) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  return true;
}

}  // namespace parley
