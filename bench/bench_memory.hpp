// Memory figures for the benchmarks: the process's resident set, and a
// STREAM-like read-bandwidth probe that decode at one sequence (every weight
// read once per token) is measured against.
#pragma once
#include <immintrin.h>
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

// Sum of buf[0, n), n a multiple of 16: four independent vector sums keep the
// adds off the critical path.
__attribute__((target("avx2"))) inline uint64_t sum_avx2(const uint64_t* buf, size_t n) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  for (size_t i = 0; i < n; i += 16) {
    a = _mm256_add_epi64(a, _mm256_load_si256(reinterpret_cast<const __m256i*>(buf + i)));
    b = _mm256_add_epi64(b, _mm256_load_si256(reinterpret_cast<const __m256i*>(buf + i + 4)));
    c = _mm256_add_epi64(c, _mm256_load_si256(reinterpret_cast<const __m256i*>(buf + i + 8)));
    d = _mm256_add_epi64(d, _mm256_load_si256(reinterpret_cast<const __m256i*>(buf + i + 12)));
  }
  a = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
  return uint64_t(_mm256_extract_epi64(a, 0) + _mm256_extract_epi64(a, 1) + _mm256_extract_epi64(a, 2) +
                  _mm256_extract_epi64(a, 3));
}
inline uint64_t sum_scalar(const uint64_t* buf, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i < n; i += 4) a += buf[i], b += buf[i + 1], c += buf[i + 2], d += buf[i + 3];
  return a + b + c + d;
}

// Seconds for `threads` threads to sum buf[0, n) once, each its own contiguous share, with AVX2 loads where the
// CPU has them (as the matmul kernels); the sum goes to `sink` so that the reads stay.
inline double read_seconds(const uint64_t* buf, size_t n, int threads, uint64_t& sink) {
  const bool avx2 = __builtin_cpu_supports("avx2");
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
  {
    const size_t chunk = n / 16 / size_t(omp_get_num_threads()) * 16, first = chunk * size_t(omp_get_thread_num());
    total += avx2 ? sum_avx2(buf + first, chunk) : sum_scalar(buf + first, chunk);
  }
  sink += total;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Best read rate in bytes/s of `threads` threads summing a buffer far larger
// than the last-level cache, in the same huge-page memory the weights live in.
inline double read_bandwidth(int threads, size_t bytes = size_t(1) << 29, int runs = 8) {
  const size_t n = bytes / sizeof(uint64_t);
  std::vector<uint64_t, cpu::HugePageAllocator<uint64_t>> buf(n);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (size_t i = 0; i < n; ++i) buf[i] = i;  // first touch by the threads that read it
  double best = 0;
  uint64_t sink = 0;
  for (int run = 0; run < runs; ++run) {
    const double s = read_seconds(buf.data(), n, threads, sink);
    best = std::max(best, double(n / 16 / size_t(threads) * 16 * size_t(threads) * sizeof(uint64_t)) / s);
  }
  if (sink == 42) std::printf(" ");  // keeps the sums alive
  return best;
}

}  // namespace parley::bench
