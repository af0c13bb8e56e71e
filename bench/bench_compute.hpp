// The integer multiply peak that the quantized matmuls are measured against: u8 x s8 products per second of
// the instruction the ISA's kernels multiply with (vpmaddubsw on AVX2 and AVX-512BW, vpdpbusd with VNNI), on
// every thread, the instruction alone. A kernel needs more than that instruction (unpacking, widening,
// scales), so its share of this peak is an upper bound on what any kernel built on the instruction can gain.
#pragma once
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "kernels/cpu/quant_matrix.hpp"

namespace parley::bench {

// Independent dependency chains, more than latency / throughput on any core these ISAs run on: each chain
// feeds its own result back, so nothing can be hoisted out of the loop.
constexpr int kChains = 12;

// Products per call: kChains instructions of 32 (ymm) or 64 (zmm) byte pairs per iteration.
__attribute__((target("avx2"))) inline double maddubs_ymm(long iters, uint64_t& sink) {
  __m256i a[kChains];
  const __m256i b = _mm256_set1_epi8(1);
  for (int i = 0; i < kChains; ++i) a[i] = _mm256_set1_epi8(static_cast<char>(i + 1));
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) a[i] = _mm256_maddubs_epi16(a[i], b);
  for (int i = 0; i < kChains; ++i) sink += uint64_t(_mm256_extract_epi64(a[i], 0));
  return 32.0 * kChains * double(iters);
}

__attribute__((target("avx512f,avx512bw"))) inline double maddubs_zmm(long iters, uint64_t& sink) {
  __m512i a[kChains];
  const __m512i b = _mm512_set1_epi32(0x01010101);  // bytes of 1
  for (int i = 0; i < kChains; ++i) a[i] = _mm512_set1_epi32((i + 1) * 0x01010101);
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) a[i] = _mm512_maddubs_epi16(a[i], b);
  alignas(64) uint64_t lanes[8];  // stored, not extracted: GCC 12 warns inside its 512-bit extracts
  for (int i = 0; i < kChains; ++i) _mm512_store_si512(lanes, a[i]), sink += lanes[0];
  return 64.0 * kChains * double(iters);
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) inline double dpbusd_zmm(long iters, uint64_t& sink) {
  __m512i acc[kChains];
  const __m512i a = _mm512_set1_epi32(0x03030303), b = _mm512_set1_epi32(int32_t(0xFEFEFEFE));
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(i);
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  alignas(64) uint64_t lanes[8];  // stored, not extracted: GCC 12 warns inside its 512-bit extracts
  for (int i = 0; i < kChains; ++i) _mm512_store_si512(lanes, acc[i]), sink += lanes[0];
  return 64.0 * kChains * double(iters);
}

struct MultiplyPeak {
  std::string instruction;  // empty: the ISA's kernels use no integer dot instruction (generic)
  double macs_per_s = 0;    // u8 x s8 products per second, all threads
};

// Best of `runs` timed passes of every thread running the instruction alone.
inline MultiplyPeak multiply_peak(cpu::QuantIsa isa, int threads, int runs = 5) {
  using cpu::QuantIsa;
  MultiplyPeak peak;
  double (*probe)(long, uint64_t&) = nullptr;
  if (isa == QuantIsa::Avx2) probe = maddubs_ymm, peak.instruction = "vpmaddubsw ymm";
  if (isa == QuantIsa::Avx512) probe = maddubs_zmm, peak.instruction = "vpmaddubsw zmm";
  if (isa == QuantIsa::Avx512Vnni || isa == QuantIsa::Amx) probe = dpbusd_zmm, peak.instruction = "vpdpbusd zmm";
  if (!probe) return peak;
  constexpr long kIters = 1 << 20;  // about 25 ms a pass on a 3 GHz core taking one ymm multiply per 2 cycles
  uint64_t sink = 0;
  for (int run = 0; run < runs; ++run) {
    double products = 0;
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : products, sink)
    products += probe(kIters, sink);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    peak.macs_per_s = std::max(peak.macs_per_s, products / s);
  }
  if (sink == 42) std::printf(" ");  // keeps the chains alive
  return peak;
}

}  // namespace parley::bench
