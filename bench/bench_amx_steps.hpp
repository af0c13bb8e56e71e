// What one step of an AMX kernel costs on this core, in nanoseconds: a tile product alone, with its two tile loads
// from L1 or from L2, with the int32 tile stored, and a 16-row float epilogue of the stored sums alone, after the
// products and beside them. The quantized kernels (kernels/cpu/qmatmul_amx.cpp) are sums of these steps, so the
// table says what bounds them: whether loads hide behind products, and whether the vector epilogue overlaps the tiles.
// One thread; the caller has had the tile state granted (quant_isa_supported(QuantIsa::Amx) asks Linux for it).
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "bench/bench_compute.hpp"
#include "kernels/cpu/amx_tiles.hpp"

namespace parley::bench {

enum class AmxStep {
  LoadsL1,           // two 1 KiB tile loads from 8 KiB, then the product into one accumulator
  LoadsL2,           // the same from 1 MiB of activations and 64 KiB of weights (past L1)
  LoadsSplit,        // LoadsL1 with the activation rows 16 bytes off a cache line: each row split across two
  Blocked2x2,        // two activation and two weight tiles from L1 feed four products: one load a product
  Stored,            // zero, two L1 loads, the product, the int32 tile stored (a kernel's unit of 16 x 16 sums)
  Epilogue,          // the vector epilogue alone: 16 rows of stored sums converted and multiply-added into floats
  StoredThenVector,  // Stored, then its epilogue
  Pipelined,         // Stored on two tile sets, each step's epilogue reading the other set's sums
};

struct AmxStepRow {
  AmxStep step;
  const char* what;
};

inline constexpr AmxStepRow kAmxSteps[] = {
    {AmxStep::LoadsL1, "2 tile loads from L1 + tdpbusd"},
    {AmxStep::LoadsL2, "2 tile loads from L2 + tdpbusd"},
    {AmxStep::LoadsSplit, "the same, rows split across lines"},
    {AmxStep::Blocked2x2, "2x2 blocked: 1 L1 load per tdpbusd"},
    {AmxStep::Stored, "zero, 2 L1 loads, tdpbusd, tile store"},
    {AmxStep::Epilogue, "16-row float epilogue alone"},
    {AmxStep::StoredThenVector, "store step, then its epilogue"},
    {AmxStep::Pipelined, "the same pipelined on two tile sets"},
};

// The kernels' epilogue in its simplest form (q8_0's): each row of int32 sums to floats, times a scale, added up.
// (The conversion is the zero-masked form: GCC 12 warns on the plain one's undefined source, inlined here.)
__attribute__((target("avx512f"), always_inline)) inline void epilogue_rows(const int32_t* s, __m512* acc) {
#pragma GCC unroll 16
  for (int r = 0; r < 16; ++r)
    acc[r] =
        _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xffff, _mm512_load_si512(s + 16 * r)), _mm512_set1_ps(0.5f), acc[r]);
}

#define PARLEY_AMX_TARGET __attribute__((target("amx-tile,amx-int8,avx512f"), always_inline))

// Step i of its kind on the tiles (8 of 16 rows x 64 bytes), against the activations and weights (L2-sized; their
// first 8 KiB stay in L1), with sums for the tile stores and acc for the epilogue. Each step is one tile product
// (Blocked2x2: a group of four in every fourth step).
PARLEY_AMX_TARGET inline void amx_step(AmxStep step, long i, const int8_t* acts, const int8_t* weights,
                                       int32_t (*sums)[256], __m512* acc) {
  const int8_t* a1 = acts + (i & 7) * 1024;  // within 8 KiB
  const int8_t* w1 = weights + (i & 7) * 1024;
  switch (step) {
    case AmxStep::LoadsL1:
    case AmxStep::LoadsSplit:
      _tile_loadd(6, a1 + (step == AmxStep::LoadsSplit ? 16 : 0), 64);
      _tile_loadd(7, w1, 64);
      _tile_dpbusd(0, 6, 7);
      break;
    case AmxStep::LoadsL2:
      _tile_loadd(6, acts + (i & 1023) * 1024, 64);   // the whole MiB
      _tile_loadd(7, weights + (i & 63) * 1024, 64);  // the whole 64 KiB
      _tile_dpbusd(0, 6, 7);
      break;
    case AmxStep::Blocked2x2:
      if (i % 4 == 0) {
        _tile_loadd(4, a1, 64);
        _tile_loadd(5, a1 + 1024, 64);
        _tile_loadd(6, w1, 64);
        _tile_loadd(7, w1 + 1024, 64);
        _tile_dpbusd(0, 4, 6);
        _tile_dpbusd(1, 4, 7);
        _tile_dpbusd(2, 5, 6);
        _tile_dpbusd(3, 5, 7);
      }
      break;
    case AmxStep::Stored:
    case AmxStep::StoredThenVector:
      _tile_zero(0);
      _tile_loadd(6, a1, 64);
      _tile_loadd(7, w1, 64);
      _tile_dpbusd(0, 6, 7);
      _tile_stored(0, sums[i & 1], 64);
      if (step == AmxStep::StoredThenVector) epilogue_rows(sums[i & 1], acc);
      break;
    case AmxStep::Epilogue:
      epilogue_rows(sums[i & 1], acc);
      break;
    case AmxStep::Pipelined:
      if (i & 1) {
        _tile_zero(1);
        _tile_loadd(5, a1, 64);
        _tile_loadd(7, w1, 64);
        _tile_dpbusd(1, 5, 7);
        _tile_stored(1, sums[1], 64);
      } else {
        _tile_zero(0);
        _tile_loadd(4, a1, 64);
        _tile_loadd(6, w1, 64);
        _tile_dpbusd(0, 4, 6);
        _tile_stored(0, sums[0], 64);
      }
      epilogue_rows(sums[(i & 1) ^ 1], acc);
      break;
  }
}

// ns per step of `steps` steps of one kind.
__attribute__((target("amx-tile,amx-int8,avx512f"))) inline double amx_step_ns(AmxStep step, long steps) {
  cpu::AmxTileConfig c;
  for (int t = 0; t < 8; ++t) c.rows[t] = 16, c.colsb[t] = 64;
  _tile_loadconfig(&c);
  alignas(64) static int8_t acts[1 << 20], weights[1 << 16];
  std::fill(acts, acts + sizeof acts, int8_t(1));
  std::fill(weights, weights + sizeof weights, int8_t(1));
  alignas(64) static int32_t sums[2][256];
  __m512 acc[16];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  _tile_zero(0);  // the intrinsics take literal tiles: one statement each
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  _tile_zero(6);
  _tile_zero(7);
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < steps; ++i) amx_step(step, i, acts, weights, sums, acc);
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  _tile_release();
  float sink = 0;
  alignas(64) float lanes[16];  // stored, not reduced: GCC 12 warns inside its 512-bit extracts
  for (__m512& a : acc) _mm512_store_ps(lanes, a), sink += lanes[0];
  if (sink == 42.0f) std::printf(" ");  // keeps the epilogue alive
  return ns / double(steps);
}
#undef PARLEY_AMX_TARGET

// ns per tile product of the multiply peak's probe (tdpbusd alone, six accumulators) on this thread.
inline double amx_product_ns() {
  uint64_t sink = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const double products = tdpbusd_tiles<64>(1 << 16, sink) / (16.0 * 16 * 64);
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / products;
}

// Best of `runs` passes of each step, printed as a table.
inline void print_amx_steps(int runs = 3) {
  std::printf("\nAMX tile steps on one thread (best of %d passes), ns per tile product of 16 x 16 x 64:\n\n", runs);
  std::printf("| %-38s | %7s |\n", "step", "ns");
  std::printf("|----------------------------------------|---------|\n");
  auto row = [&](const char* what, auto pass) {
    double best = 1e30;
    for (int run = 0; run < runs; ++run) best = std::min(best, pass());
    std::printf("| %-38s | %7.2f |\n", what, best);
  };
  row("tdpbusd alone (full depth)", amx_product_ns);
  for (const AmxStepRow& step : kAmxSteps) row(step.what, [&] { return amx_step_ns(step.step, 1 << 18); });
}

}  // namespace parley::bench
