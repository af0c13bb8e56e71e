// The quantized matmul per weight type and kernel variant: weight GB/s at M=1 (decode: memory bound) and
// GFLOP/s at M=32 (prefill-like: compute bound), on a 2048x2048 and an 8192x2048 (N x K) matrix.
// Usage: bench_qmatmul [--threads T] [--isa generic|avx2|avx512bw|avx512vnni] [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/quant_matrix.hpp"
#include "model/quant/quantize.hpp"

using namespace parley::cpu;
using parley::quant::GgmlType;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<float> noise(size_t n, uint64_t seed, float scale) {
  std::vector<float> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& x : v) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x = scale * (static_cast<float>(s >> 40) / float(1 << 24) * 2.0f - 1.0f);
  }
  return v;
}

// Best of several runs lasting about `budget` seconds in all: a noisy neighbour only ever slows a run.
template <class F>
double best_seconds(F run, double budget) {
  run();  // warm: pages touched, activations' scratch allocated
  double best = 1e30, total = 0;
  for (int r = 0; r < 200 && (r < 5 || total < budget); ++r) {
    const auto t0 = Clock::now();
    run();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::min(best, s), total += s;
  }
  return best;
}

struct Shape { int N, K; };

}  // namespace

int main(int argc, char** argv) {
  int threads = 0;
  std::string only;
  double budget = 0.5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::stoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--isa") && i + 1 < argc) only = argv[++i];
    else if (!std::strcmp(argv[i], "--quick")) budget = 0.1;
    else {
      std::fprintf(stderr, "usage: %s [--threads T] [--isa generic|avx2|avx512bw|avx512vnni] [--quick]\n", argv[0]);
      return 2;
    }
  }
  const CpuBackend backend(threads);
  threads = backend.threads();
  const GgmlType types[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                            GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::F16, GgmlType::BF16};
  const Shape shapes[] = {{2048, 2048}, {8192, 2048}};
  std::printf("threads %d; M=1: GB/s of the file's weight bytes; M=32: GFLOP/s (2*M*N*K)\n\n", threads);
  std::printf("| %-10s | %-5s | %-11s | %9s | %9s | %10s |\n", "isa", "type", "N x K", "M=1 GB/s", "M=1 us",
              "M=32 GF/s");
  std::printf("|------------|-------|-------------|-----------|-----------|------------|\n");
  for (QuantIsa isa : {QuantIsa::Generic, QuantIsa::Avx2, QuantIsa::Avx512, QuantIsa::Avx512Vnni}) {
    if (!only.empty() && quant_isa_name(isa) != only) continue;
    if (!quant_isa_supported(isa)) {
      std::printf("| %-10s | (not supported by this CPU)\n", quant_isa_name(isa).c_str());
      continue;
    }
    for (const Shape& s : shapes) {
      const std::vector<float> w = noise(size_t(s.N) * s.K, 1, 0.02f), x = noise(size_t(32) * s.K, 2, 1.0f);
      std::vector<float> out(size_t(32) * s.N);
      for (GgmlType type : types) {
        const size_t row = parley::quant::row_bytes(type, s.K);
        std::vector<uint8_t> file(row * s.N);
        parley::quant::quantize_chunk(type, w.data(), file.data(), 0, s.N, s.K);
        const QuantMatrix packed = pack_quant_matrix(type, file.data(), s.N, s.K);
        const double t1 = best_seconds([&] { quant_matmul(isa, threads, x.data(), packed, out.data(), 1); }, budget);
        const double t32 = best_seconds([&] { quant_matmul(isa, threads, x.data(), packed, out.data(), 32); }, budget);
        std::printf("| %-10s | %-5s | %5d x %4d | %9.1f | %9.1f | %10.1f |\n", quant_isa_name(isa).c_str(),
                    parley::quant::ggml_type_name(uint32_t(type)).c_str(), s.N, s.K, double(file.size()) / t1 / 1e9,
                    t1 * 1e6, 2.0 * 32 * s.N * s.K / t32 / 1e9);
      }
    }
  }
  return 0;
}
