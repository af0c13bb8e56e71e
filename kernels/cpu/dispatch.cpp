// CpuBackend: picks the instruction set at run time and spreads each op over OpenMP threads.
// Work is split by output element only, never inside a reduction, so results are thread-count invariant.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/reference.hpp"

namespace parley::cpu {

namespace {

SimdKernels kernels_for(Isa isa) {
  switch (checked_isa(isa)) {
    case Isa::Amx: {  // the AVX-512 kernels; the quantized matmul takes the tiles (quant_isa_for)
      SimdKernels k = avx512_kernels();
      k.isa = Isa::Amx;
      return k;
    }
    case Isa::Avx512:
      return avx512_kernels();
    case Isa::Avx2:
      return avx2_kernels();
    default:
      return generic_kernels();
  }
}

// Below this much work an op runs on the calling thread: a fork/join costs more than it saves.
constexpr int64_t kParallelFlops = 1 << 16;

}  // namespace

CpuBackend::CpuBackend(int threads, Isa isa)
    : simd_(kernels_for(isa)), threads_(threads > 0 ? threads : omp_get_num_procs()) {}

PackedMatrix pack_matrix(const float* w, int N, int K) {
  PackedMatrix p;
  p.N = N, p.K = K;
  p.data.assign(size_t(p.panels()) * K * PackedMatrix::kPanel, 0.0f);
  for (int n = 0; n < N; ++n) {
    float* panel =
        p.data.data() + size_t(n / PackedMatrix::kPanel) * K * PackedMatrix::kPanel + n % PackedMatrix::kPanel;
    for (int k = 0; k < K; ++k) panel[size_t(k) * PackedMatrix::kPanel] = w[size_t(n) * K + k];
  }
  return p;
}

void CpuBackend::matmul(const float* x, const PackedMatrix& w, float* out, int M) const {
  const int N = w.N, K = w.K, panels = w.panels();
  const int64_t flops = int64_t(M) * N * K;
  const int workers = flops < kParallelFlops ? 1 : std::min(threads_, panels);
  if (workers <= 1) {
    simd_.matmul(x, w.data.data(), out, M, N, K, 0, panels);
    return;
  }
  // About 8 chunks of panels per thread, taken dynamically: a thread a noisy neighbour slows takes fewer.
  const int chunk = std::max(1, (panels + workers * 8 - 1) / (workers * 8));
  const int num_chunks = (panels + chunk - 1) / chunk;
#pragma omp parallel for num_threads(workers) schedule(dynamic, 1)
  for (int c = 0; c < num_chunks; ++c)
    simd_.matmul(x, w.data.data(), out, M, N, K, c * chunk, std::min(panels, (c + 1) * chunk));
}

namespace {
// Rows [0, M) in one contiguous range per thread when there is enough work; each row's arithmetic is its own,
// so the split changes no bits.
template <class Run>
void split_rows(int threads, int M, int64_t work_per_row, Run run) {
  const int workers = int64_t(M) * work_per_row < (1 << 15) ? 1 : std::min(threads, M);
  if (workers <= 1) return run(0, M);
#pragma omp parallel for num_threads(workers) schedule(static)
  for (int t = 0; t < workers; ++t) run(int(int64_t(M) * t / workers), int(int64_t(M) * (t + 1) / workers));
}

// A gated activation row by row: op(gate, up, out, hidden) on each row's halves.
template <class Op>
void gated_rows(int threads, const float* gate_up, float* out, int M, int hidden, Op op) {
  split_rows(threads, M, 8 * int64_t(hidden), [&](int begin, int end) {
    for (int m = begin; m < end; ++m)
      op(gate_up + int64_t(m) * 2 * hidden, gate_up + int64_t(m) * 2 * hidden + hidden, out + int64_t(m) * hidden,
         hidden);
  });
}
}  // namespace

void CpuBackend::rmsnorm(const float* x, const float* weight, float* out, int M, int dim, float eps) const {
  split_rows(threads_, M, dim, [&](int begin, int end) {
    reference::rmsnorm(x + int64_t(begin) * dim, weight, out + int64_t(begin) * dim, end - begin, dim, eps);
  });
}

void CpuBackend::layernorm(const float* x, const float* weight, const float* bias, float* out, int M, int dim,
                           float eps) const {
  split_rows(threads_, M, dim, [&](int begin, int end) {
    for (int m = begin; m < end; ++m)
      simd_.layernorm(x + int64_t(m) * dim, weight, bias, out + int64_t(m) * dim, dim, eps);
  });
}

void CpuBackend::rope(float* x, const int* positions, int M, int n_heads, int head_dim, const RopeSpec& spec) const {
  const int rot = spec.rot_dims > 0 ? spec.rot_dims : head_dim;
  split_rows(threads_, M, 16 * int64_t(rot) + int64_t(n_heads) * head_dim, [&](int begin, int end) {
    reference::rope(x + int64_t(begin) * n_heads * head_dim, positions + begin, end - begin, n_heads, head_dim, spec);
  });
}

void CpuBackend::swiglu_rows(const float* gate_up, float* out, int M, int hidden) const {
  gated_rows(threads_, gate_up, out, M, hidden, simd_.swiglu);
}

void CpuBackend::geglu_rows(const float* gate_up, float* out, int M, int hidden) const {
  gated_rows(threads_, gate_up, out, M, hidden, simd_.geglu);
}

void CpuBackend::gelu_rows(float* x, const float* bias, int M, int n) const {
  split_rows(threads_, M, 8 * int64_t(n), [&](int begin, int end) {
    for (int m = begin; m < end; ++m) {
      float* row = x + int64_t(m) * n;
      if (bias)  // while the row is in L1
        for (int j = 0; j < n; ++j) row[j] += bias[j];
      simd_.gelu(row, row, n);
    }
  });
}

void CpuBackend::add_rows(float* x, const float* bias, const float* residual, int M, int n) const {
  if (!bias && !residual) return;
  split_rows(threads_, M, n, [&](int begin, int end) {
    for (int m = begin; m < end; ++m) {
      float* row = x + int64_t(m) * n;
      const float* r = residual ? residual + int64_t(m) * n : nullptr;
      if (bias && r)
        for (int j = 0; j < n; ++j) row[j] = (row[j] + bias[j]) + r[j];
      else if (bias)
        for (int j = 0; j < n; ++j) row[j] += bias[j];
      else
        for (int j = 0; j < n; ++j) row[j] += r[j];
    }
  });
}

void CpuBackend::split_columns(const float* x, const float* bias, int M,
                               std::initializer_list<ColumnSlice> slices) const {
  int width = 0;
  for (const ColumnSlice& s : slices) width += s.width;
  split_rows(threads_, M, width, [&](int begin, int end) {
    for (int m = begin; m < end; ++m) {
      int column = 0;
      for (const ColumnSlice& s : slices) {
        const float* in = x + int64_t(m) * width + column;
        float* out = s.out + int64_t(m) * s.width;
        if (bias)  // adding zero instead would turn -0 into +0
          for (int j = 0; j < s.width; ++j) out[j] = in[j] + bias[column + j];
        else
          std::copy_n(in, s.width, out);
        column += s.width;
      }
    }
  });
}

void CpuBackend::embedding(const float* table, const int* tokens, int M, int dim, float* out) const {
  reference::embedding(table, tokens, M, dim, out);
}

void CpuBackend::kv_write(const KvLayerView& kv, const float* k, const float* v, const int64_t* slots, int M) const {
  if (kv.dtype != KvDtype::F16) return reference::kv_write(kv, k, v, slots, M);
  for (int m = 0; m < M; ++m) {  // F16C's rounding: the reference's bits (tested)
    simd_.to_f16(k + int64_t(m) * kv.kv_dim, kv.keys_as<uint16_t>() + slots[m] * kv.kv_dim, kv.kv_dim);
    simd_.to_f16(v + int64_t(m) * kv.kv_dim, kv.values_as<uint16_t>() + slots[m] * kv.kv_dim, kv.kv_dim);
  }
}

void CpuBackend::paged_attention(const float* q, const KvLayerView& kv, const AttentionMetadata& meta, int n_heads,
                                 int n_kv_heads, int head_dim, float* out, const AttentionSpec& spec) const {
  int64_t work = 0;
  for (int t = 0; t < meta.num_tokens; ++t)
    work += int64_t(meta.last_key(t) + 1 - spec.first_key(meta.positions[t])) * n_heads * head_dim;
  const int workers = work < kParallelFlops ? 1 : threads_;
  // Tiles of about kTileQueries queries: a run of one sequence's consecutive tokens at one kv head's query
  // heads (a prefill: each key row read, or staged, once for the run), or, for a run too short for that (decode),
  // at several kv heads (each slot read in one stretch). A tile's bits are each query's own, so the split is free.
  constexpr int kTileQueries = 32;
  const int group = n_heads / n_kv_heads;
  struct Tile {
    int token_begin, token_end, kv_begin, kv_end;
  };
  std::vector<Tile> tiles;
  for (int t = 0, end; t < meta.num_tokens; t = end) {
    for (end = t + 1;
         end < meta.num_tokens && end - t < kTileQueries / group && meta.token_seq[end] == meta.token_seq[t];)
      ++end;
    const int heads = std::clamp(kTileQueries / ((end - t) * group), 1, n_kv_heads);
    for (int h = 0; h < n_kv_heads; h += heads) tiles.push_back({t, end, h, std::min(n_kv_heads, h + heads)});
  }
  if (int(tiles.size()) < workers) {  // too few for the threads: one kv head each
    std::vector<Tile> split;
    for (const Tile& tile : tiles)
      for (int h = tile.kv_begin; h < tile.kv_end; ++h) split.push_back({tile.token_begin, tile.token_end, h, h + 1});
    tiles.swap(split);
  }
  const AttentionCall call{q, &kv, &meta, n_heads, n_kv_heads, head_dim, spec, out};
  const int64_t count = int64_t(tiles.size());
  // Later tiles see more keys: taken first, they leave the short ones to even out the threads' ends.
  auto run_tile = [&](int64_t i, std::vector<float>& scratch) {
    const Tile& tile = tiles[size_t(count - 1 - i)];
    simd_.attention_tile(call, tile.token_begin, tile.token_end, tile.kv_begin, tile.kv_end, scratch);
  };
  // Each thread's scratch is declared where that thread passes: a block-scope thread_local registers its destructor
  // there, so one declared outside the region would leak its buffer in every OpenMP thread (LeakSanitizer).
  if (workers <= 1) {  // no parallel region: libgomp makes a futex call for each, even with one thread
    thread_local std::vector<float> scratch;
    for (int64_t i = 0; i < count; ++i) run_tile(i, scratch);
    return;
  }
#pragma omp parallel num_threads(workers)
  {
    thread_local std::vector<float> scratch;
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < count; ++i) run_tile(i, scratch);
  }
}

}  // namespace parley::cpu
