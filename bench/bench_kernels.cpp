// GEMM/GEMV throughput of the CPU backend at decode-like batch sizes, against the machine's measured
// FMA peak. Usage: bench_kernels [--threads T] [--isa auto|avx2|avx512|generic]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/ops.hpp"

using namespace parley::cpu;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Peak FLOP/s of `threads` cores running the ISA's register-only FMA probe at once.
// Best of 5 runs: a noisy neighbour can only lower a run, never raise it.
double measured_peak(const CpuBackend& be) {
  const int64_t iters = 10'000'000;
  const double flops_per_iter = 2.0 * 10 * be.simd().lanes;
  double best = 1e30;
  float sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = Clock::now();
#pragma omp parallel num_threads(be.threads()) reduction(+ : sink)
    sink += be.simd().fma_probe(iters);
    best = std::min(best, seconds_since(t0));
  }
  if (sink == 12345.0f) std::puts("");  // keeps the probe's result alive
  return flops_per_iter * iters * be.threads() / best;
}

double best_gflops(const CpuBackend& be, int M, int N, int K) {
  std::vector<float> x(size_t(M) * K, 0.01f), w(size_t(N) * K, 0.02f), out(size_t(M) * N);
  const PackedMatrix packed = pack_matrix(w.data(), N, K);
  double best = 1e30;
  const int reps = std::max(3, int(2e9 / (2.0 * M * N * K + 1e7)));
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    be.matmul(x.data(), packed, out.data(), M);
    best = std::min(best, seconds_since(t0));
  }
  return 2.0 * M * N * K / best / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0;
  std::string isa = "auto";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads")) threads = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--isa")) isa = argv[i + 1];
    else { std::fprintf(stderr, "usage: %s [--threads T] [--isa auto|avx2|avx512|generic]\n", argv[0]); return 2; }
  }
  const CpuBackend be(threads, parse_isa(isa));
  const double peak = measured_peak(be) / 1e9;
  std::printf("CPU backend: isa %s, %d threads, measured FMA peak %.1f GFLOP/s\n\n", isa_name(be.isa()).c_str(),
              be.threads(), peak);
  std::printf("| %-28s | %5s | %9s | %7s | %13s |\n", "matrix (110M-model shape)", "batch", "GFLOP/s", "% peak", "weights GB/s");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(30, '-').c_str(), std::string(7, '-').c_str(), std::string(11, '-').c_str(),
              std::string(9, '-').c_str(), std::string(15, '-').c_str());
  struct Shape { const char* name; int N, K; };
  const Shape shapes[] = {{"qkv  2304 x 768", 2304, 768}, {"gate_up 4096 x 768", 4096, 768},
                          {"down  768 x 2048", 768, 2048}, {"logits 32000 x 768", 32000, 768}};
  for (const Shape& s : shapes)
    for (int M : {1, 8, 32, 128}) {
      const double g = best_gflops(be, M, s.N, s.K);
      const double weight_gbs = g * 1e9 / (2.0 * M) * sizeof(float) / 1e9;  // weight bytes streamed per second
      std::printf("| %-28s | %5d | %9.1f | %6.1f%% | %13.1f |\n", s.name, M, g, 100.0 * g / peak, weight_gbs);
    }
  return 0;
}
