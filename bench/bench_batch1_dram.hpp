// Batch 1 from DRAM: the M=1 kernel on a packed matrix far larger than the last-level cache, each pass paired with
// a plain read of the same packed bytes on the same threads (the read probe's loop). On a shared host the memory
// rate drifts from second to second, so the ratio of neighbouring passes says what the kernel leaves of the rate
// better than its GB/s beside a probe taken minutes apart.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_memory.hpp"
#include "kernels/cpu/quant_matrix.hpp"
#include "kernels/quant/quantize.hpp"

namespace parley::bench {

struct Batch1Dram {
  double kernel_gbs = 0, read_gbs = 0;  // the best pass of each
  double median_ratio = 0;              // kernel / read, the median over the pairs
};

// `rows` quantized once, repeated down to N rows of K so the packed matrix holds about `bytes`.
inline cpu::QuantMatrix big_matrix(quant::GgmlType type, cpu::QuantIsa isa, const std::vector<float>& rows, int K,
                                   size_t bytes) {
  const int base = static_cast<int>(rows.size() / size_t(K));
  const size_t row = quant::row_bytes(type, K);
  std::vector<uint8_t> one(row * size_t(base));
  quant::quantize_chunk(type, rows.data(), one.data(), 0, base, K);
  const int N = static_cast<int>(bytes / row / size_t(base)) * base;
  std::vector<uint8_t> file(row * size_t(N));
  for (int n = 0; n < N; n += base) std::copy(one.begin(), one.end(), file.begin() + ptrdiff_t(row) * n);
  return cpu::pack_quant_matrix(type, file.data(), N, K, isa);
}

inline Batch1Dram batch1_from_dram(const cpu::QuantMatrix& w, cpu::QuantIsa isa, int threads, const float* x,
                                   int pairs) {
  std::vector<float> out(size_t(w.N));
  const auto* words = reinterpret_cast<const uint64_t*>(w.data.data());
  const size_t n = w.data.size() / sizeof(uint64_t) / 16 / size_t(threads) * 16 * size_t(threads);
  const double bytes = double(w.data.size()), read_bytes = double(n * sizeof(uint64_t));
  uint64_t sink = 0;
  cpu::quant_matmul(isa, threads, x, w, out.data(), 1);  // warm: the activations' scratch allocated
  Batch1Dram r;
  std::vector<double> ratios;
  for (int i = 0; i < pairs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    cpu::quant_matmul(isa, threads, x, w, out.data(), 1);
    const double kernel = bytes / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1e9;
    const double read = read_bytes / read_seconds(words, n, threads, sink) / 1e9;
    r.kernel_gbs = std::max(r.kernel_gbs, kernel), r.read_gbs = std::max(r.read_gbs, read);
    ratios.push_back(kernel / read);
  }
  std::sort(ratios.begin(), ratios.end());
  r.median_ratio = ratios[ratios.size() / 2];
  if (sink == 42) std::printf(" ");  // keeps the sums alive
  return r;
}

// One row per type: q8_0 and the Q4_K_M mix's q4_K and q6_K (only_type: that one alone, by its ggml name); weight
// rows of x.size() (the 1B shape's 2048 is what its attention and up projections read).
inline void print_batch1_from_dram(cpu::QuantIsa isa, int threads, const std::vector<float>& rows,
                                   const std::vector<float>& x, int pairs, const std::string& only_type) {
  const int K = static_cast<int>(x.size());
  constexpr size_t kBytes = size_t(512) << 20;
  std::printf(
      "\nbatch 1 from DRAM, %s, %d thread(s): M=1 on a %zu MiB packed matrix (K = %d), each pass paired with a "
      "plain read of the same bytes\n\n",
      cpu::quant_isa_name(isa).c_str(), threads, kBytes >> 20, K);
  std::printf("| type  | kernel GB/s | read GB/s | kernel / read, median of %2d pairs |\n", pairs);
  std::printf("|-------|-------------|-----------|-----------------------------------|\n");
  for (quant::GgmlType type : {quant::GgmlType::Q8_0, quant::GgmlType::Q4_K, quant::GgmlType::Q6_K}) {
    if (!only_type.empty() && quant::ggml_type_name(uint32_t(type)) != only_type) continue;
    const cpu::QuantMatrix w = big_matrix(type, isa, rows, K, kBytes);
    const Batch1Dram r = batch1_from_dram(w, isa, threads, x.data(), pairs);
    std::printf("| %-5s | %11.1f | %9.1f | %32.0f%% |\n", quant::ggml_type_name(uint32_t(type)).c_str(), r.kernel_gbs,
                r.read_gbs, 100 * r.median_ratio);
  }
}

}  // namespace parley::bench
