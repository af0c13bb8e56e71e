// The integer multiply peak that the quantized matmuls are measured against: u8 x s8 products per second of
// the instruction the ISA's kernels multiply with (vpmaddubsw on AVX2 and AVX-512BW, vpdpbusd with VNNI, and
// with AMX tdpbusd at the 32 of a tile's 64 bytes of depth its kernels use), on every thread, the instruction alone. A
// kernel needs more than that instruction (unpacking, widening, scales), so its share of this peak is an upper bound on
// what any kernel built on the instruction can gain.
#pragma once
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "kernels/cpu/amx_tiles.hpp"
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

// AMX: six accumulator tiles (16 x 16 int32) against one activation and one weight tile of `depth` bytes (64: a
// full tile; 32: the kernels' sub-block), so that the one TMUL unit never waits on a product's latency. The
// caller has had the tile state granted (quant_isa_supported(QuantIsa::Amx) asks Linux for it).
template <int Depth>
__attribute__((target("amx-tile,amx-int8"))) inline double tdpbusd_tiles(long iters, uint64_t& sink) {
  cpu::AmxTileConfig c;
  for (int t = 0; t < 6; ++t) c.rows[t] = 16, c.colsb[t] = 64;
  c.rows[6] = 16, c.colsb[6] = Depth;      // activations: 16 rows x depth bytes
  c.rows[7] = Depth / 4, c.colsb[7] = 64;  // weights: depth / 4 rows of 16 columns x 4 bytes
  _tile_loadconfig(&c);
  alignas(64) static thread_local uint8_t bytes[16 * 64];
  std::fill(bytes, bytes + sizeof bytes, uint8_t(1));
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  _tile_loadd(6, bytes, 64);
  _tile_loadd(7, bytes, 64);
  for (long it = 0; it < iters; ++it) {  // the intrinsics are asm statements: one per line
    _tile_dpbusd(0, 6, 7);
    _tile_dpbusd(1, 6, 7);
    _tile_dpbusd(2, 6, 7);
    _tile_dpbusd(3, 6, 7);
    _tile_dpbusd(4, 6, 7);
    _tile_dpbusd(5, 6, 7);
  }
  alignas(64) int32_t out[16 * 16];
  _tile_stored(0, out, 64);
  _tile_release();
  sink += uint64_t(out[0]);
  return 6.0 * 16 * 16 * Depth * double(iters);
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
  if (isa == QuantIsa::Avx512Vnni) probe = dpbusd_zmm, peak.instruction = "vpdpbusd zmm";
  if (isa == QuantIsa::Amx) probe = tdpbusd_tiles<32>, peak.instruction = "tdpbusd at 32 of 64 k";
  if (!probe) return peak;
  // About 25 ms a pass on a 3 GHz core taking one ymm multiply per 2 cycles (a tile product: 16 cycles).
  const long kIters = isa == QuantIsa::Amx ? 1 << 16 : 1 << 20;
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

// The AMX tile product at full depth (64 bytes): what a kernel of 64-k units could reach; products per second.
inline double amx_full_depth_peak(int threads, int runs = 5) {
  double best = 0;
  uint64_t sink = 0;
  for (int run = 0; run < runs; ++run) {
    double products = 0;
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : products, sink)
    products += tdpbusd_tiles<64>(1 << 16, sink);
    best = std::max(best, products / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (sink == 42) std::printf(" ");
  return best;
}

}  // namespace parley::bench
