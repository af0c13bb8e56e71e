// quant_matmul: the activations are quantized once per call, each row on its own (kernels/quant's q8_0 and q8_K
// encoders, so their bytes are ggml's), then the weight panels are spread over threads. Work is split by
// output column panels only, so a row's bits never depend on M, its company, or the thread count.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/qmatmul_kernels.hpp"
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/quantize.hpp"

namespace parley::cpu {

namespace {

using quant::GgmlType;

enum class Activations { Floats, Q8_0, Q8_0WithOffsets, Q8_K };

Activations activations_for(GgmlType type) {
  switch (type) {
    case GgmlType::F16:
    case GgmlType::BF16:
      return Activations::Floats;
    case GgmlType::Q4_1:
    case GgmlType::Q5_1:
      return Activations::Q8_0WithOffsets;
    case GgmlType::Q3_K:
    case GgmlType::IQ4_XS:
    case GgmlType::Q4_K:
    case GgmlType::Q5_K:
    case GgmlType::Q6_K:
      return Activations::Q8_K;
    default:
      return Activations::Q8_0;
  }
}

// One row as q8_0 blocks: ggml's quants (round(x / d), d = amax / 127), each block's integer sum, and d * sum
// where an offset needs it. d stays in f32 here: a file's fp16 d would add its rounding (up to 2^-11) to every
// product of the block, and nothing reads these blocks but the kernels.
void quantize_row_q8_0(const float* x, int K, int8_t* qs, float* d, int32_t* sums, float* offsets) {
  for (int b = 0; b < K / 32; ++b, x += 32, qs += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float scale = amax / 127.0f, inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) sum += qs[j] = static_cast<int8_t>(std::round(x[j] * inverse));
    d[b] = scale, sums[b] = sum;
    if (offsets) offsets[b] = scale * static_cast<float>(sum);
  }
}

void quantize_row_q8_K(const float* x, int K, int8_t* qs, float* d, int32_t* bsums) {
  thread_local std::vector<quant::BlockQ8_K> blocks;
  blocks.resize(K / 256);
  quant::quantize_row(GgmlType::Q8_K, x, blocks.data(), K);
  for (int b = 0; b < K / 256; ++b) {
    d[b] = blocks[b].d;
    std::memcpy(qs + 256 * b, blocks[b].qs, 256);
    for (int j = 0; j < 16; ++j) bsums[16 * b + j] = blocks[b].bsums[j];
  }
}

// x[M][K] as QuantizedRows::tiles: tile t's row r at k is tiles[(t * K + k) * 16 + r].
void tile_rows(const float* x, int M, int K, int threads, std::vector<float>& tiles) {
  constexpr int R = qmm::QuantizedRows::kTileRows;
  const int count = (M + R - 1) / R;
  tiles.resize(size_t(count) * R * K);
  auto tile_of = [&](int t) {
    float* tile = tiles.data() + size_t(t) * R * K;
    for (int r = 0; r < R; ++r) {
      const int m = t * R + r;
      for (int k = 0; k < K; ++k) tile[size_t(k) * R + r] = m < M ? x[size_t(m) * K + k] : 0.0f;
    }
  };
  const int workers = int64_t(M) * K < (1 << 15) ? 1 : std::min(threads, count);
  if (workers <= 1) {
    for (int t = 0; t < count; ++t) tile_of(t);
    return;
  }
#pragma omp parallel for num_threads(workers) schedule(static)
  for (int t = 0; t < count; ++t) tile_of(t);
}

void quantize_activations(const float* x, int M, int K, Activations format, QuantIsa isa, int threads,
                          qmm::QuantizedRows& rows) {
  rows.M = M, rows.K = K, rows.x = x;
  if (format == Activations::Floats) {
    rows.qs.clear(), rows.d.clear(), rows.sums.clear(), rows.offsets.clear();
    const bool avx512 = isa == QuantIsa::Avx512 || isa == QuantIsa::Avx512Vnni || isa == QuantIsa::Amx;
    if (avx512 && M >= 4)  // the kernel's 16-row tiles (qmatmul_impl.hpp: half_tile_pair)
      tile_rows(x, M, K, threads, rows.tiles);
    else
      rows.tiles.clear();
    return;
  }
  const int block = format == Activations::Q8_K ? 256 : 32;
  const int blocks = K / block, sums = format == Activations::Q8_K ? K / 16 : blocks;
  rows.qs.resize(size_t(M) * K);
  rows.d.resize(size_t(M) * blocks);
  rows.sums.resize(size_t(M) * sums);
  rows.offsets.resize(format == Activations::Q8_0WithOffsets ? size_t(M) * blocks : 0);
  rows.min_pairs.resize(format == Activations::Q8_K ? size_t(M) * rows.min_pairs_per_row() : 0);
  rows.bsum_pairs.resize(format == Activations::Q8_K ? size_t(M) * rows.bsum_pairs_per_row() : 0);
  const bool avx512 = isa == QuantIsa::Avx512 || isa == QuantIsa::Avx512Vnni || isa == QuantIsa::Amx;
  const bool avx2 = isa == QuantIsa::Avx2;
  const auto q8_0 = avx512 ? qmm::quantize_row_q8_0_avx512 : avx2 ? qmm::quantize_row_q8_0_avx2 : quantize_row_q8_0;
  const auto q8_K = avx512 ? qmm::quantize_row_q8_K_avx512 : avx2 ? qmm::quantize_row_q8_K_avx2 : quantize_row_q8_K;
  auto quantize_row = [&](int m) {
    int8_t* qs = rows.qs.data() + size_t(m) * K;
    float* d = rows.d.data() + size_t(m) * blocks;
    int32_t* s = rows.sums.data() + size_t(m) * sums;
    if (format == Activations::Q8_K) {
      q8_K(x + size_t(m) * K, K, qs, d, s);
      auto pair = [](int32_t low, int32_t high) { return int32_t((uint32_t(low) & 0xffffu) | uint32_t(high) << 16); };
      int32_t* neighbours = rows.bsum_pairs.data() + size_t(m) * rows.bsum_pairs_per_row();
      for (int i = 0; i < rows.bsum_pairs_per_row(); ++i)
        neighbours[i] = pair(s[2 * i], s[2 * i + 1]);  // |bsum| <= 16 * 127
      int32_t* pairs = rows.min_pairs.data() + size_t(m) * rows.min_pairs_per_row();
      for (int i = 0; i < rows.min_pairs_per_row(); ++i)  // each sum of two at most 2 * 16 * 127: int16
        pairs[i] = pair(s[4 * i] + s[4 * i + 1], s[4 * i + 2] + s[4 * i + 3]);
    } else {
      float* offsets = rows.offsets.empty() ? nullptr : rows.offsets.data() + size_t(m) * blocks;
      q8_0(x + size_t(m) * K, K, qs, d, s, offsets);
    }
  };
  const int workers = int64_t(M) * K < (1 << 15) ? 1 : std::min(threads, M);
  if (workers <= 1) {  // no parallel region: libgomp makes a futex call for each, even with one thread
    for (int m = 0; m < M; ++m) quantize_row(m);
    return;
  }
#pragma omp parallel for num_threads(workers) schedule(static)
  for (int m = 0; m < M; ++m) quantize_row(m);
}

qmm::PanelsFn panels_for(QuantIsa isa) {
  switch (isa) {
    case QuantIsa::Avx2:
      return qmm::panels_avx2;
    case QuantIsa::Avx512:
      return qmm::panels_avx512;
    case QuantIsa::Avx512Vnni:
      return qmm::panels_avx512vnni;
    case QuantIsa::Amx:
      return qmm::panels_amx;
    default:
      return qmm::panels_generic;
  }
}

// AMX needs the CPU's tile instructions and Linux's leave to use the tile state (asked once for the process).

// Below this much work a matmul runs on the calling thread: a fork/join costs more than it saves.
constexpr int64_t kParallelWork = 1 << 16;

// Rows taken at once: every panel reads all of a call's rows, so past L2 (a prefill's 2048 rows at K = 768 are
// 6 MiB as floats) each panel would stream them again from L3. A block keeps them in L2 while the threads go
// through the panels: f16/bf16 weights 1.09x faster on a BERT-base prefill (docs/benchmarks.md). Int8 rows are a
// quarter of that and the AMX kernel unpacks its weight tiles once per call, so they go whole (1.04x slower).
int rows_per_block(int M, int K, Activations format) {
  constexpr int64_t kBlockBytes = 1 << 20;
  if (format != Activations::Floats) return M;
  return std::min(M, std::max<int>(64, int(kBlockBytes / (4 * int64_t(K))) / 16 * 16));
}

}  // namespace

std::string quant_isa_name(QuantIsa isa) {
  switch (isa) {
    case QuantIsa::Generic:
      return "generic";
    case QuantIsa::Avx2:
      return "avx2";
    case QuantIsa::Avx512:
      return "avx512bw";
    case QuantIsa::Avx512Vnni:
      return "avx512vnni";
    case QuantIsa::Amx:
      return "amx";
  }
  return "?";
}

bool quant_isa_supported(QuantIsa isa) {
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  switch (isa) {
    case QuantIsa::Generic:
      return true;
    case QuantIsa::Avx2:
      return avx2;
    case QuantIsa::Avx512:
      return avx512;
    case QuantIsa::Avx512Vnni:
      return avx512 && __builtin_cpu_supports("avx512vnni");
    case QuantIsa::Amx:
      return avx512 && __builtin_cpu_supports("avx512vnni") && amx_tiles_usable();
  }
  return false;
}

QuantIsa quant_isa_for(Isa isa) {
  if (isa == Isa::Auto) isa = best_isa();
  if (isa == Isa::Amx && quant_isa_supported(QuantIsa::Amx)) return QuantIsa::Amx;
  if (isa == Isa::Avx512 || isa == Isa::Amx) {
    if (quant_isa_supported(QuantIsa::Avx512Vnni)) return QuantIsa::Avx512Vnni;
    if (quant_isa_supported(QuantIsa::Avx512)) return QuantIsa::Avx512;
    isa = Isa::Avx2;  // AVX-512F without BW: the byte kernels need BW
  }
  if (isa == Isa::Avx2 && quant_isa_supported(QuantIsa::Avx2)) return QuantIsa::Avx2;
  return QuantIsa::Generic;
}

void quant_matmul(QuantIsa isa, int threads, const float* x, const QuantMatrix& w, float* out, int M) {
  if (M < 0) throw std::invalid_argument("quant_matmul: negative row count " + std::to_string(M));
  if (!quant_matmul_supported(w.type) || w.data.empty())
    throw std::invalid_argument("quant_matmul: the matrix is empty or of an unsupported type " +
                                quant::ggml_type_name(static_cast<uint32_t>(w.type)));
  if (!quant_isa_supported(isa)) throw std::invalid_argument("quant_matmul: this CPU lacks " + quant_isa_name(isa));
  if (M == 0) return;
  qmm::QuantizedRows& rows = [&]() -> qmm::QuantizedRows& {
    thread_local qmm::QuantizedRows scratch;  // reused: a decode step allocates nothing
    return scratch;
  }();
  const Activations format = activations_for(w.type);
  quantize_activations(x, M, w.K, format, isa, threads, rows);
  const qmm::PanelsFn panels_fn = panels_for(isa);
  const int panels = w.panels();
  const int block = rows_per_block(M, w.K, format), blocks = (M + block - 1) / block;
  const int workers = int64_t(M) * w.N * w.K < kParallelWork ? 1 : std::min(threads, panels);
  if (workers <= 1) {
    for (int m = 0; m < M; m += block) panels_fn(rows, w, out, m, std::min(M, m + block), 0, panels);
    return;
  }
  // About 8 chunks of panels per thread, taken dynamically, as in the f32 matmul (AMX: pairs of panels), row
  // block by row block, so that the threads share a block's rows while it is in their caches.
  int chunk = std::max(1, (panels + workers * 8 - 1) / (workers * 8));
  if (isa == QuantIsa::Amx) chunk += chunk % 2;
  const int num_chunks = (panels + chunk - 1) / chunk;
#pragma omp parallel for num_threads(workers) schedule(dynamic, 1)
  for (int item = 0; item < blocks * num_chunks; ++item) {
    const int m = item / num_chunks * block, c = item % num_chunks;
    panels_fn(rows, w, out, m, std::min(M, m + block), c * chunk, std::min(panels, (c + 1) * chunk));
  }
}

void CpuBackend::matmul(const float* x, const QuantMatrix& w, float* out, int M) const {
  quant_matmul(quant_isa_for(isa()), threads_, x, w, out, M);
}

}  // namespace parley::cpu
