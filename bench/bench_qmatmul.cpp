// The quantized matmul per weight type and kernel variant: weight GB/s at M=1 (decode: memory bound) and
// GFLOP/s at M=32 (a decode batch) and M=512 (a prefill: compute bound), on a 2048x2048 and an 8192x2048 (N x K)
// matrix; then batch 1 on a matrix far larger than the cache, each pass paired with a plain read of its bytes.
// With --ggml DIR (node-llama-cpp's prebuilt libggml-base.so and libggml-cpu-haswell.so), a second table puts
// one thread of the best variant beside one thread of ggml's own vec_dot on the same rows (ggml's mul_mat path
// without its repacked or tinyBLAS kernels), activations' quantization included on both sides.
// Usage: bench_qmatmul [--threads T] [--isa generic|avx2|avx512bw|avx512vnni] [--quick] [--type T] [--ggml DIR]
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_amx_steps.hpp"
#include "bench/bench_batch1_dram.hpp"
#include "bench/bench_compute.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/quant_matrix.hpp"
#include "kernels/quant/quantize.hpp"

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

struct Shape {
  int N, K;
};

// ggml-cpu.h's ggml_type_traits_cpu, as the prebuilt library exports it.
using VecDot = void (*)(int n, float* s, size_t bs, const void* x, size_t bx, const void* y, size_t by, int nrc);
struct GgmlCpuTraits {
  void (*from_float)(const float* x, void* y, int64_t k);
  VecDot vec_dot;
  uint32_t vec_dot_type;
  int64_t nrows;
};
using GetTraits = const GgmlCpuTraits* (*)(uint32_t type);

GetTraits load_ggml(const std::string& dir) {
  if (!dlopen((dir + "/libggml-base.so").c_str(), RTLD_NOW | RTLD_GLOBAL)) return nullptr;
  void* cpu = dlopen((dir + "/libggml-cpu-haswell.so").c_str(), RTLD_NOW);
  if (!cpu) return nullptr;
  reinterpret_cast<void (*)()>(dlsym(cpu, "ggml_cpu_init"))();
  return reinterpret_cast<GetTraits>(dlsym(cpu, "ggml_get_type_traits_cpu"));
}

// ggml's CPU mul_mat without its extra buffer types: activations to vec_dot_type, then one vec_dot per output.
void ggml_matmul(const GgmlCpuTraits& t, const float* x, const uint8_t* w, size_t w_row, int M, int N, int K,
                 std::vector<uint8_t>& xq, float* out) {
  const size_t x_row = parley::quant::row_bytes(static_cast<GgmlType>(t.vec_dot_type), K);
  xq.resize(x_row * M);
  for (int m = 0; m < M; ++m) t.from_float(x + size_t(m) * K, xq.data() + m * x_row, K);
  for (int n = 0; n < N; ++n)
    for (int m = 0; m < M; ++m) t.vec_dot(K, out + size_t(m) * N + n, 0, w + n * w_row, 0, xq.data() + m * x_row, 0, 1);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0;
  std::string only, only_type, ggml_dir;
  double budget = 0.5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::stoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--isa") && i + 1 < argc)
      only = argv[++i];
    else if (!std::strcmp(argv[i], "--quick"))
      budget = 0.1;
    else if (!std::strcmp(argv[i], "--type") && i + 1 < argc)
      only_type = argv[++i];
    else if (!std::strcmp(argv[i], "--ggml") && i + 1 < argc)
      ggml_dir = argv[++i];
    else {
      std::fprintf(
          stderr,
          "usage: %s [--threads T] [--isa generic|avx2|avx512bw|avx512vnni] [--quick] [--type T] [--ggml DIR]\n",
          argv[0]);
      return 2;
    }
  }
  const CpuBackend backend(threads);
  threads = backend.threads();
  const GgmlType types[] = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                            GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::F16,  GgmlType::BF16};
  const Shape shapes[] = {{2048, 2048}, {8192, 2048}};
  std::printf("threads %d; M=1: GB/s of the file's weight bytes; M=32 and M=512: GFLOP/s (2*M*N*K)\n\n", threads);
  std::printf("| %-10s | %-5s | %-11s | %9s | %9s | %10s | %11s |\n", "isa", "type", "N x K", "M=1 GB/s", "M=1 us",
              "M=32 GF/s", "M=512 GF/s");
  std::printf("|------------|-------|-------------|-----------|-----------|------------|-------------|\n");
  std::string peaks;  // each ISA's multiply instruction alone: the ceiling of its M=32 column
  for (QuantIsa isa : {QuantIsa::Generic, QuantIsa::Avx2, QuantIsa::Avx512, QuantIsa::Avx512Vnni, QuantIsa::Amx}) {
    if (!only.empty() && quant_isa_name(isa) != only) continue;
    if (!quant_isa_supported(isa)) {
      std::printf("| %-10s | (not supported by this CPU)\n", quant_isa_name(isa).c_str());
      continue;
    }
    const parley::bench::MultiplyPeak peak = parley::bench::multiply_peak(isa, threads);
    if (!peak.instruction.empty())
      peaks += "\n  " + quant_isa_name(isa) + ", " + peak.instruction + ": " +
               std::to_string(int(2 * peak.macs_per_s / 1e9)) + " GFLOP/s";
    if (isa == QuantIsa::Amx)
      peaks += "\n  amx, tdpbusd at full depth (64 k): " +
               std::to_string(int(2 * parley::bench::amx_full_depth_peak(threads) / 1e9)) + " GFLOP/s";
    for (const Shape& s : shapes) {
      const std::vector<float> w = noise(size_t(s.N) * s.K, 1, 0.02f), x = noise(size_t(512) * s.K, 2, 1.0f);
      std::vector<float> out(size_t(512) * s.N);
      for (GgmlType type : types) {
        if (!only_type.empty() && parley::quant::ggml_type_name(uint32_t(type)) != only_type) continue;
        const size_t row = parley::quant::row_bytes(type, s.K);
        std::vector<uint8_t> file(row * s.N);
        parley::quant::quantize_chunk(type, w.data(), file.data(), 0, s.N, s.K);
        const QuantMatrix packed = pack_quant_matrix(type, file.data(), s.N, s.K, isa);
        const double t1 = best_seconds([&] { quant_matmul(isa, threads, x.data(), packed, out.data(), 1); }, budget);
        const double t32 = best_seconds([&] { quant_matmul(isa, threads, x.data(), packed, out.data(), 32); }, budget);
        const double t512 =
            best_seconds([&] { quant_matmul(isa, threads, x.data(), packed, out.data(), 512); }, budget);
        std::printf("| %-10s | %-5s | %5d x %4d | %9.1f | %9.1f | %10.1f | %11.1f |\n", quant_isa_name(isa).c_str(),
                    parley::quant::ggml_type_name(uint32_t(type)).c_str(), s.N, s.K, double(file.size()) / t1 / 1e9,
                    t1 * 1e6, 2.0 * 32 * s.N * s.K / t32 / 1e9, 2.0 * 512 * s.N * s.K / t512 / 1e9);
      }
    }
  }
  if (!peaks.empty())
    std::printf("\nmultiply peak on %d thread(s), the instruction alone, 2 flops per u8 x s8 product:%s\n", threads,
                peaks.c_str());
  if ((only.empty() || only == "amx") && quant_isa_supported(QuantIsa::Amx)) parley::bench::print_amx_steps();
  // Batch 1 against the memory it streams from, for the ISA --isa names (by default the one decode uses).
  for (QuantIsa isa : {QuantIsa::Generic, QuantIsa::Avx2, QuantIsa::Avx512, QuantIsa::Avx512Vnni, QuantIsa::Amx})
    if (quant_isa_supported(isa) && (only.empty() ? isa == quant_isa_for(Isa::Auto) : quant_isa_name(isa) == only))
      parley::bench::print_batch1_from_dram(isa, threads, noise(size_t(256) * 2048, 3, 0.02f), noise(2048, 4, 1.0f),
                                            budget < 0.5 ? 6 : 12, only_type);
  if (ggml_dir.empty()) return 0;
  const GetTraits traits = load_ggml(ggml_dir);
  if (!traits) {
    std::fprintf(stderr, "cannot load ggml from %s: %s\n", ggml_dir.c_str(), dlerror());
    return 1;
  }
  const QuantIsa best = quant_isa_for(Isa::Auto);
  std::printf("\none thread: parley %s against ggml's vec_dot (libggml-cpu-haswell.so)\n\n",
              quant_isa_name(best).c_str());
  std::printf("| %-5s | %-11s | %11s | %9s | %11s | %10s |\n", "type", "N x K", "M=1 parley", "M=1 ggml", "M=32 parley",
              "M=32 ggml");
  std::printf("|-------|-------------|-------------|-----------|-------------|------------|\n");
  for (const Shape& s : shapes) {
    const std::vector<float> w = noise(size_t(s.N) * s.K, 1, 0.02f), x = noise(size_t(32) * s.K, 2, 1.0f);
    std::vector<float> out(size_t(32) * s.N);
    std::vector<uint8_t> xq;
    for (GgmlType type : types) {
      const size_t row = parley::quant::row_bytes(type, s.K);
      std::vector<uint8_t> file(row * s.N);
      parley::quant::quantize_chunk(type, w.data(), file.data(), 0, s.N, s.K);
      const QuantMatrix packed = pack_quant_matrix(type, file.data(), s.N, s.K);
      const GgmlCpuTraits& t = *traits(uint32_t(type));
      auto ours = [&](int M) {
        return best_seconds([&] { quant_matmul(best, 1, x.data(), packed, out.data(), M); }, budget);
      };
      auto theirs = [&](int M) {
        return best_seconds([&] { ggml_matmul(t, x.data(), file.data(), row, M, s.N, s.K, xq, out.data()); }, budget);
      };
      const double flops = 2.0 * 32 * s.N * s.K, bytes = double(file.size());
      std::printf("| %-5s | %5d x %4d | %6.1f GB/s | %4.1f GB/s | %6.1f GF/s | %5.1f GF/s |\n",
                  parley::quant::ggml_type_name(uint32_t(type)).c_str(), s.N, s.K, bytes / ours(1) / 1e9,
                  bytes / theirs(1) / 1e9, flops / ours(32) / 1e9, flops / theirs(32) / 1e9);
    }
  }
  return 0;
}
