// Memory figures for the benchmarks: the process's resident set, and a STREAM-like read-bandwidth probe that
// decode at one sequence (every weight read once per token) is measured against.
#pragma once
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/cpu/weight_buffer.hpp"

namespace parley::bench {

// VmRSS of this process in bytes (0 where /proc is absent).
inline size_t resident_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

// Best read rate in bytes/s of `threads` threads summing a buffer far larger than the last-level cache, in the
// same huge-page memory the weights live in. Four elements per add keep the sum's chain off the critical path.
inline double read_bandwidth(int threads, size_t bytes = size_t(1) << 29, int runs = 5) {
  const size_t n = bytes / sizeof(uint64_t);
  std::vector<uint64_t, cpu::HugePageAllocator<uint64_t>> buf(n);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (size_t i = 0; i < n; ++i) buf[i] = i;  // first touch by the threads that read it
  double best = 0;
  uint64_t sink = 0;
  for (int run = 0; run < runs; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t total = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
    for (size_t i = 0; i < n; i += 4) total += buf[i] + buf[i + 1] + (buf[i + 2] ^ buf[i + 3]);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sink += total;
    best = std::max(best, double(n * sizeof(uint64_t)) / s);
  }
  if (sink == 42) std::printf(" ");  // keeps the sums alive
  return best;
}

}  // namespace parley::bench
