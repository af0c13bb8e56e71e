// GEMM/GEMV throughput of the CPU backend at decode-like batch sizes, against the machine's measured
// FMA peak; then paged attention's time for a prefill and a decode step per KV dtype.
// Usage: bench_kernels [--threads T] [--isa auto|avx2|avx512|generic] [--only matmul|attention]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/ops.hpp"

using namespace parley;
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

struct AttentionShape {
  const char* name;
  int n_heads, n_kv_heads, head_dim;
};

// Best-of time of one layer's paged_attention: `tokens` queries of one sequence ending at position
// context - 1 (a prefill of 512 from 0, or one decode token), over blocks of 16 in a scattered order.
double best_attention_ms(const CpuBackend& be, const AttentionShape& s, KvDtype dtype, int tokens, int context) {
  const int block_size = 16, num_blocks = (context + block_size - 1) / block_size, kv_dim = s.n_kv_heads * s.head_dim;
  const size_t kv_elems = size_t(num_blocks) * block_size * kv_dim;
  std::vector<float> keys(kv_elems), values(kv_elems);  // as f32, or the first half read as 16-bit elements
  for (size_t i = 0; i < kv_elems; ++i) {
    const float k = float(i % 97) / 97.0f - 0.5f, v = float(i % 89) / 89.0f - 0.5f;
    if (dtype == KvDtype::F32)
      keys[i] = k, values[i] = v;
    else {
      auto* k16 = reinterpret_cast<uint16_t*>(keys.data());
      auto* v16 = reinterpret_cast<uint16_t*>(values.data());
      k16[i] = dtype == KvDtype::F16 ? f32_to_f16(k) : f32_to_bf16(k);
      v16[i] = dtype == KvDtype::F16 ? f32_to_f16(v) : f32_to_bf16(v);
    }
  }
  std::vector<int> table(num_blocks), positions(tokens), token_seq(tokens, 0);
  for (int b = 0; b < num_blocks; ++b)
    table[size_t(b)] = num_blocks - 1 - b;  // reversed: a used pool seldom hands out blocks in order
  for (int t = 0; t < tokens; ++t) positions[size_t(t)] = context - tokens + t;
  const KvLayerView kv{keys.data(), values.data(), block_size, kv_dim, dtype};
  const AttentionMetadata meta{tokens, positions.data(), token_seq.data(), table.data(), num_blocks};
  std::vector<float> q(size_t(tokens) * s.n_heads * s.head_dim), out(q.size());
  for (size_t i = 0; i < q.size(); ++i) q[i] = float(i % 13) / 13.0f - 0.5f;
  double best = 1e30, total = 0;
  for (int r = 0; r < 100 && (r < 3 || total < 1.0); ++r) {
    const auto t0 = Clock::now();
    be.paged_attention(q.data(), kv, meta, s.n_heads, s.n_kv_heads, s.head_dim, out.data());
    const double dt = seconds_since(t0);
    best = std::min(best, dt), total += dt;
  }
  return best * 1e3;
}

void attention_table(const CpuBackend& be) {
  std::printf("\n| %-26s | %-19s | %4s | %9s |\n", "attention (one layer)", "batch", "kv", "best ms");
  std::printf("|%s|%s|%s|%s|\n", std::string(28, '-').c_str(), std::string(21, '-').c_str(),
              std::string(6, '-').c_str(), std::string(11, '-').c_str());
  const AttentionShape shapes[] = {{"12 heads of 64 (110M)", 12, 12, 64}, {"32 heads, 8 kv, of 128", 32, 8, 128}};
  struct Batch {
    const char* name;
    int tokens, context;
  };
  const Batch batches[] = {{"prefill 512", 512, 512}, {"decode 1 at 1536", 1, 1536}};
  for (const AttentionShape& s : shapes)
    for (const Batch& b : batches)
      for (KvDtype d : {KvDtype::F32, KvDtype::F16, KvDtype::Bf16})
        std::printf("| %-26s | %-19s | %4s | %9.3f |\n", s.name, b.name, kv_dtype_name(d).c_str(),
                    best_attention_ms(be, s, d, b.tokens, b.context));
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0;
  std::string isa = "auto", only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads"))
      threads = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--isa"))
      isa = argv[i + 1];
    else if (!std::strcmp(argv[i], "--only"))
      only = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: %s [--threads T] [--isa auto|avx2|avx512|generic] [--only matmul|attention]\n",
                   argv[0]);
      return 2;
    }
  }
  const CpuBackend be(threads, parse_isa(isa));
  if (only == "attention") {
    std::printf("CPU backend: isa %s, %d threads\n", isa_name(be.isa()).c_str(), be.threads());
    attention_table(be);
    return 0;
  }
  const double peak = measured_peak(be) / 1e9;
  std::printf("CPU backend: isa %s, %d threads, measured FMA peak %.1f GFLOP/s\n\n", isa_name(be.isa()).c_str(),
              be.threads(), peak);
  std::printf("| %-28s | %5s | %9s | %7s | %13s |\n", "matrix (110M-model shape)", "batch", "GFLOP/s", "% peak",
              "weights GB/s");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(30, '-').c_str(), std::string(7, '-').c_str(),
              std::string(11, '-').c_str(), std::string(9, '-').c_str(), std::string(15, '-').c_str());
  struct Shape {
    const char* name;
    int N, K;
  };
  const Shape shapes[] = {{"qkv  2304 x 768", 2304, 768},
                          {"gate_up 4096 x 768", 4096, 768},
                          {"down  768 x 2048", 768, 2048},
                          {"logits 32000 x 768", 32000, 768}};
  for (const Shape& s : shapes)
    for (int M : {1, 8, 32, 128}) {
      const double g = best_gflops(be, M, s.N, s.K);
      const double weight_gbs = g * 1e9 / (2.0 * M) * sizeof(float) / 1e9;  // weight bytes streamed per second
      std::printf("| %-28s | %5d | %9.1f | %6.1f%% | %13.1f |\n", s.name, M, g, 100.0 * g / peak, weight_gbs);
    }
  if (only != "matmul") attention_table(be);
  return 0;
}
