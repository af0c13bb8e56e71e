// Paged attention over the KV cache for the SIMD kernels (simd_impl.hpp): a tile of queries of one sequence
// at a few kv heads, keys and values read in place (F32) or staged widened to F32, with one fixed order of
// operations per query.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/reference.hpp"
#include "kernels/cpu/simd_exp.hpp"

namespace parley::cpu::simd {

// A KV row's vector of W values at b + i, widened to F32.
template <class V, KvDtype D>
typename V::T load_kv(const void* b, int i) {
  if constexpr (D == KvDtype::F32)
    return V::load(static_cast<const float*>(b) + i);
  else if constexpr (D == KvDtype::F16)
    return V::load_f16(static_cast<const uint16_t*>(b) + i);
  else
    return V::load_bf16(static_cast<const uint16_t*>(b) + i);
}

template <KvDtype D>
float kv_at(const void* b, int i) {
  return KvElem<D>::load(static_cast<const typename KvElem<D>::T*>(b), i);
}

// Paged attention, one tile at a time: the queries of consecutive tokens of one sequence at the heads of one
// kv head. Batch invariance: every number a query computes depends on that query's own keys alone, however
// many queries share the tile, so a token alone, in a prefill or beside other sequences gets the same bits:
//  - a score is one FMA chain over the head's W-wide slices (zero-padded to a whole vector), then hsum's tree,
//    W keys at once (hsum_each) with the same tree in every lane: which lane a key lands in does not matter;
//  - the max, the exps and their sum run over the query's keys from its first, W at a time;
//  - each output element is one FMA chain over the query's keys in ascending order, divided by the sum once.
// The tile reads each key and value row through a pointer: straight into the cache for a few queries (a decode
// tile) where the rows are whole vectors, else into rows the tile staged (widened to F32, zero-padded) once for
// all its queries. The arithmetic is the same either way, so the two give the same bits.
namespace attention {

constexpr int kQueries = 4;     // queries sharing each value row in the weighted sum
constexpr int kMaxChunk = 256;  // keys per chunk

inline int round_up(int n, int m) { return (n + m - 1) / m * m; }

// Where a tile's rows come from: one layer's keys or values, one sequence's block table, kv heads [head, head + heads).
struct RowSource {
  const void* base;
  const KvLayerView* kv;
  const int* table;
  int head, hd, hd_pad;
};

// Rows of keys [k0, k1) at the tile's first head, of element type D; head h's row is rows[k] + h * head_stride.
// W - 1 more entries repeat the last key, so a last group of W keys scores finite numbers nobody reads.
template <KvDtype D>
struct ChunkRows {
  const typename KvElem<D>::T* rows[kMaxChunk + 16];
  int64_t head_stride;  // elements
};

// Keys [k0, k1) of each of `heads` heads widened to F32 and zero-padded to hd_pad: rows [head][key][hd_pad],
// head h's from out + h * head_stride. A slot's heads are read in one pass, front to back.
template <class V, KvDtype D>
void stage(const RowSource& src, int heads, int k0, int k1, int64_t head_stride, float* out) {
  constexpr int W = V::W;
  const KvLayerView& kv = *src.kv;
  const int hd = src.hd, hd_pad = src.hd_pad, full = hd / W, slices = hd_pad / W;
  const int64_t row_bytes = int64_t(kv.kv_dim) * kv_dtype_bytes(D), head_bytes = int64_t(hd) * kv_dtype_bytes(D);
  const char* first_head = static_cast<const char*>(src.base) + src.head * head_bytes;
  int block = k0 / kv.block_size, offset = k0 % kv.block_size;  // walked, not divided, key by key
  for (int k = 0; k < k1 - k0; ++k) {
    const char* slot = first_head + (int64_t(src.table[block]) * kv.block_size + offset) * row_bytes;
    if (++offset == kv.block_size) offset = 0, ++block;
    for (int h = 0; h < heads; ++h) {
      const void* from = slot + h * head_bytes;
      float* row = out + h * head_stride + int64_t(k) * hd_pad;
      for (int i = 0; i < full; ++i) V::store(row + i * W, load_kv<V, D>(from, i * W));
      if (full < slices) {
        float tail[W] = {};
        for (int d = full * W; d < hd; ++d) tail[d - full * W] = kv_at<D>(from, d);
        V::store(row + full * W, V::load(tail));
      }
    }
  }
}

using StageFn = void (*)(const RowSource&, int, int, int, int64_t, float*);

template <class V>
StageFn stage_for(KvDtype d) {
  switch (d) {
    case KvDtype::F16:
      return &stage<V, KvDtype::F16>;
    case KvDtype::Bf16:
      return &stage<V, KvDtype::Bf16>;
    default:
      return &stage<V, KvDtype::F32>;
  }
}

// The cache's own rows of keys [k0, k1) (whole vectors: nothing to pad).
template <KvDtype D>
void cache_rows(const RowSource& src, int k0, int k1, int W, ChunkRows<D>& out) {
  using T = typename KvElem<D>::T;
  const KvLayerView& kv = *src.kv;
  const T* first_head = static_cast<const T*>(src.base) + int64_t(src.head) * src.hd;
  int block = k0 / kv.block_size, offset = k0 % kv.block_size;
  const int n = k1 - k0;
  for (int k = 0; k < n; ++k) {
    out.rows[k] = first_head + (int64_t(src.table[block]) * kv.block_size + offset) * kv.kv_dim;
    if (++offset == kv.block_size) offset = 0, ++block;
  }
  for (int k = n; k < round_up(n, W); ++k) out.rows[k] = out.rows[n - 1];
  out.head_stride = src.hd;
}

// Rows of keys [k0, k1) at `heads` heads staged into `staged`, head h's from staged + h * staged_stride.
inline void staged_rows(const RowSource& src, int heads, int k0, int k1, int W, StageFn stage_rows, float* staged,
                        int64_t staged_stride, ChunkRows<KvDtype::F32>& out) {
  const int n = k1 - k0;
  stage_rows(src, heads, k0, k1, staged_stride, staged);
  for (int k = 0; k < n; ++k) out.rows[k] = staged + int64_t(k) * src.hd_pad;
  for (int k = n; k < round_up(n, W); ++k) out.rows[k] = out.rows[n - 1];
  out.head_stride = staged_stride;
}

// The W scores of one query (zero-padded, slices of W) against W key rows of type D (each at keys[k] + head_offset).
template <class V, KvDtype D>
typename V::T score_group(const float* q, const typename KvElem<D>::T* const* keys, int64_t head_offset, int slices) {
  constexpr int W = V::W;
  const typename KvElem<D>::T* key[W];
  typename V::T acc[W];
#pragma GCC unroll 16
  for (int k = 0; k < W; ++k) acc[k] = V::zero(), key[k] = keys[k] + head_offset;
  for (int i = 0; i < slices; ++i) {
    const typename V::T qv = V::load(q + i * W);
#pragma GCC unroll 16
    for (int k = 0; k < W; ++k) acc[k] = V::fma(qv, load_kv<V, D>(key[k], i * W), acc[k]);
  }
  return V::hsum_each(acc);
}

// Softcap, max, exp and sum over one query's n scores (in place, from its first key); returns the sum. A sink
// (a logit without a value; -inf: none) joins the max and the sum.
template <class V>
float softmax_row(float* row, int n, float softcap, float sink) {
  using T = typename V::T;
  constexpr int W = V::W;
  if (softcap > 0.0f)
    for (int i = 0; i < n; ++i) row[i] = reference::softcap(row[i], softcap);
  const int full = n - n % W;
  float max_score = -INFINITY;
  if (full > 0) {
    T m = V::load(row);
    for (int i = W; i < full; i += W) m = V::max(m, V::load(row + i));
    float lanes[W];
    V::store(lanes, m);
    for (float x : lanes) max_score = std::max(max_score, x);
  }
  for (int i = full; i < n; ++i) max_score = std::max(max_score, row[i]);
  max_score = std::max(max_score, sink);
  const T mv = V::set1(max_score);
  T sum = V::zero();
  for (int i = 0; i < full; i += W) {
    const T e = exp_nonpositive<V>(V::sub(V::load(row + i), mv));
    V::store(row + i, e);
    sum = V::add(sum, e);
  }
  if (full < n) {  // the last partial vector: the missing lanes' exps are 0
    float tail[W];
    std::fill_n(tail, W, -INFINITY);
    std::copy(row + full, row + n, tail);
    const T e = exp_nonpositive<V>(V::sub(V::load(tail), mv));
    V::store(tail, e);
    std::copy_n(tail, n - full, row + full);
    sum = V::add(sum, e);
  }
  return sink == -INFINITY ? V::hsum(sum) : V::hsum(sum) + std::exp(sink - max_score);
}

// One query of the weighted sum: its exps (indexed by key), its accumulator row, the keys it sees and its head's rows.
struct SumQuery {
  const float* weights;  // key j's at j - weights_from
  int weights_from;
  float* acc;
  int first, last;
  int64_t head_offset;  // key k's value row at rows[k - k0] + head_offset
};

// NB slices from slice s of QG queries' accumulators over the value rows of keys [k0, ...): keys [lo, hi) all QG
// see run unmasked; those only some see, before and after, take the FMA only for those. OneHead: the queries
// share each row's loads. Queries of different heads interleave their chains, which hides the FMA latency that
// one query of a few slices would wait on.
template <class V, int QG, int NB, bool OneHead, KvDtype D>
void sum_slices(const SumQuery* qs, const typename KvElem<D>::T* const* rows, int k0, int s, int from, int lo, int hi,
                int to) {
  using T = typename V::T;
  constexpr int W = V::W;
  T acc[QG][NB];
#pragma GCC unroll 16
  for (int g = 0; g < QG; ++g)
#pragma GCC unroll 16
    for (int v = 0; v < NB; ++v) acc[g][v] = V::load(qs[g].acc + (s + v) * W);
  auto step = [&](int key, bool all) __attribute__((always_inline)) {
    const auto* row = rows[key - k0] + s * W;
    T vals[NB];
    if constexpr (OneHead)
#pragma GCC unroll 16
      for (int v = 0; v < NB; ++v) vals[v] = load_kv<V, D>(row + qs[0].head_offset, v * W);
#pragma GCC unroll 16
    for (int g = 0; g < QG; ++g) {
      if (!all && (key < qs[g].first || key > qs[g].last)) continue;
      const T w = V::set1(qs[g].weights[key - qs[g].weights_from]);
#pragma GCC unroll 16
      for (int v = 0; v < NB; ++v)
        acc[g][v] = V::fma(w, OneHead ? vals[v] : load_kv<V, D>(row + qs[g].head_offset, v * W), acc[g][v]);
    }
  };
  for (int key = from; key < lo; ++key) step(key, false);
  for (int key = lo; key < hi; ++key) step(key, true);
  for (int key = std::max(lo, hi); key < to; ++key) step(key, false);
#pragma GCC unroll 16
  for (int g = 0; g < QG; ++g)
#pragma GCC unroll 16
    for (int v = 0; v < NB; ++v) V::store(qs[g].acc + (s + v) * W, acc[g][v]);
}

template <class V, int QG, int NB, bool OneHead, KvDtype D>
void sum_tail(const SumQuery* qs, const typename KvElem<D>::T* const* rows, int k0, int s, int nb, int from, int lo,
              int hi, int to) {
  if constexpr (NB > 0) {
    if (nb == NB) return sum_slices<V, QG, NB, OneHead, D>(qs, rows, k0, s, from, lo, hi, to);
    sum_tail<V, QG, NB - 1, OneHead, D>(qs, rows, k0, s, nb, from, lo, hi, to);
  }
}

// QG queries over the values of keys [k0, k1), in blocks of slices that keep the accumulators in registers.
template <class V, int QG, bool OneHead, KvDtype D>
void weighted_sum(const SumQuery* qs, const typename KvElem<D>::T* const* rows, int hd_pad, int k0, int k1) {
  constexpr int NB = V::kSumAccumulators / QG;
  int from = k1, to = k0, lo = k0, hi = k1;  // the union and the intersection of the queries' keys in the chunk
  for (int g = 0; g < QG; ++g) {
    from = std::min(from, std::max(k0, qs[g].first)), to = std::max(to, std::min(k1, qs[g].last + 1));
    lo = std::max(lo, qs[g].first), hi = std::min(hi, qs[g].last + 1);
  }
  if (from >= to) return;
  if (lo >= hi) lo = hi = to;  // no key all see: every key takes the masked step
  const int slices = hd_pad / V::W;
  for (int s = 0; s < slices; s += NB)
    sum_tail<V, QG, NB, OneHead, D>(qs, rows, k0, s, std::min(NB, slices - s), from, lo, hi, to);
}

// Queries are numbered head-major: kv head kv_begin + q / per_head, token token_begin + q % per_head / group.
// Rows of type D are read where they lie when stage_rows is null; else staged (D is then F32).
template <class V, KvDtype D>
void tile_over(const AttentionCall& c, int token_begin, int token_end, int kv_begin, int kv_end,
               std::vector<float>& scratch, StageFn stage_rows) {
  using T = typename V::T;
  constexpr int W = V::W;
  const AttentionMetadata& meta = *c.meta;
  const int group = c.n_heads / c.n_kv_heads, hd = c.head_dim, hd_pad = round_up(hd, W), slices = hd_pad / W;
  const int heads = kv_end - kv_begin, per_head = (token_end - token_begin) * group, nq = heads * per_head;
  auto token = [&](int q) { return token_begin + q % per_head / group; };
  auto first_key = [&](int q) { return c.spec.first_key(meta.positions[token(q)]); };
  auto last_key = [&](int q) { return meta.last_key(token(q)); };
  auto q_row = [&](int q) { return int64_t(token(q)) * c.n_heads + (kv_begin + q / per_head) * group + q % group; };
  int key_begin = first_key(0), key_end = last_key(0) + 1;  // every key a query of the tile sees
  for (int q = group; q < per_head; q += group)
    key_begin = std::min(key_begin, first_key(q)), key_end = std::max(key_end, last_key(q) + 1);
  const int row = round_up(key_end - key_begin, W);
  // Staged rows ~32 KiB at a time.
  const int chunk = stage_rows ? std::clamp(8192 / (heads * hd_pad) / W * W, W, kMaxChunk) : kMaxChunk;
  // A cache line more than a head's rows hold: strides of 4 KiB multiples would map every head's row to one L1 set.
  const int64_t head_stride = int64_t(chunk) * hd_pad + 16;

  scratch.resize(size_t(nq) * (2 * hd_pad + row) + (stage_rows ? size_t(heads) * head_stride : 0) + nq + 16);
  float* queries =
      scratch.data() + (-reinterpret_cast<uintptr_t>(scratch.data()) / 4 & 15);  // [nq][hd_pad], zero-padded
  // (64-byte aligned, as every part below then is: their sizes are whole vectors)
  float* acc = queries + size_t(nq) * hd_pad;  // [nq][hd_pad]
  float* scores = acc + size_t(nq) * hd_pad;   // [nq][row]: key j at j - key_begin
  float* staged = scores + size_t(nq) * row;   // [heads][chunk][hd_pad] where rows are staged
  float* sums = staged + (stage_rows ? size_t(heads) * head_stride : 0);
  for (int q = 0; q < nq; ++q) {
    std::copy_n(c.q + q_row(q) * hd, hd, queries + int64_t(q) * hd_pad);
    std::fill(queries + int64_t(q) * hd_pad + hd, queries + int64_t(q + 1) * hd_pad, 0.0f);
  }
  std::fill_n(acc, size_t(nq) * hd_pad, 0.0f);
  const int* table = meta.block_tables + int64_t(meta.token_seq[token_begin]) * meta.max_blocks_per_seq;
  const RowSource keys{c.kv->keys, c.kv, table, kv_begin, hd, hd_pad};
  const RowSource values{c.kv->values, c.kv, table, kv_begin, hd, hd_pad};
  ChunkRows<D> rows;
  auto rows_of = [&](const RowSource& src, int k0, int k1) {
    if constexpr (D == KvDtype::F32)
      if (stage_rows) return staged_rows(src, heads, k0, k1, W, stage_rows, staged, head_stride, rows);
    cache_rows<D>(src, k0, k1, W, rows);
  };

  // Scores, a chunk of keys at a time.
  const T scale = V::set1(c.spec.score_scale(hd));
  for (int k0 = key_begin; k0 < key_end; k0 += chunk) {
    const int k1 = std::min(key_end, k0 + chunk);
    rows_of(keys, k0, k1);
    for (int q = 0; q < nq; ++q) {
      const int64_t head_offset = q / per_head * rows.head_stride;
      const int lo = std::max(k0, first_key(q)), hi = std::min(k1, last_key(q) + 1);
      for (int g = (lo - k0) / W; k0 + g * W < hi; ++g)
        V::store(
            scores + int64_t(q) * row + (k0 - key_begin) + g * W,
            V::mul(score_group<V, D>(queries + int64_t(q) * hd_pad, rows.rows + g * W, head_offset, slices), scale));
    }
  }
  for (int q = 0; q < nq; ++q)
    sums[q] = softmax_row<V>(scores + int64_t(q) * row + first_key(q) - key_begin, last_key(q) + 1 - first_key(q),
                             c.spec.softcap, c.spec.sinks ? c.spec.sinks[q_row(q) % c.n_heads] : -INFINITY);

  // The weighted sum of values, a chunk of keys at a time, kQueries queries at once (of one head: sharing each row).
  SumQuery qs[kQueries];
  for (int k0 = key_begin; k0 < key_end; k0 += chunk) {
    const int k1 = std::min(key_end, k0 + chunk);
    rows_of(values, k0, k1);
    for (int q0 = 0; q0 < nq;) {
      const int n = nq - q0 >= kQueries ? kQueries : nq - q0 >= 2 ? 2 : 1;
      for (int g = 0; g < n; ++g)
        qs[g] = {scores + int64_t(q0 + g) * row,
                 key_begin,
                 acc + int64_t(q0 + g) * hd_pad,
                 first_key(q0 + g),
                 last_key(q0 + g),
                 (q0 + g) / per_head * rows.head_stride};
      const bool one_head = qs[0].head_offset == qs[n - 1].head_offset;
      if (n == kQueries)
        (one_head ? weighted_sum<V, kQueries, true, D> : weighted_sum<V, kQueries, false, D>)(qs, rows.rows, hd_pad, k0,
                                                                                              k1);
      else if (n == 2)
        (one_head ? weighted_sum<V, 2, true, D> : weighted_sum<V, 2, false, D>)(qs, rows.rows, hd_pad, k0, k1);
      else
        weighted_sum<V, 1, true, D>(qs, rows.rows, hd_pad, k0, k1);
      q0 += n;
    }
  }
  const int full = hd / W;
  for (int q = 0; q < nq; ++q) {
    float* out = c.out + q_row(q) * hd;
    const float* a = acc + int64_t(q) * hd_pad;
    const T sum = V::set1(sums[q]);
    for (int i = 0; i < full; ++i) V::store(out + i * W, V::div(V::load(a + i * W), sum));
    for (int d = full * W; d < hd; ++d) out[d] = a[d] / sums[q];
  }
}

// Queries per kv head up to which a tile reads rows of whole vectors where they lie (16-bit ones widened at every
// read); more queries (a prefill) share rows staged once. F32 rows too: in the cache a key's rows lie kv_dim floats
// apart (4 KiB at 8 kv heads of 128), all in one L1 set, and a prefill reading them in place took twice as long as
// one staging them (bench_kernels, 32 heads, 8 kv, of 128: 22.6 ms against 12.8).
constexpr int kUnstagedQueries = 4;

template <class V>
void tile(const AttentionCall& c, int token_begin, int token_end, int kv_begin, int kv_end,
          std::vector<float>& scratch) {
  const KvDtype d = c.kv->dtype;
  const int per_kv_head = (token_end - token_begin) * (c.n_heads / c.n_kv_heads);
  if (c.head_dim % V::W == 0 && per_kv_head <= kUnstagedQueries) switch (d) {
      case KvDtype::F16:
        return tile_over<V, KvDtype::F16>(c, token_begin, token_end, kv_begin, kv_end, scratch, nullptr);
      case KvDtype::Bf16:
        return tile_over<V, KvDtype::Bf16>(c, token_begin, token_end, kv_begin, kv_end, scratch, nullptr);
      default:
        return tile_over<V, KvDtype::F32>(c, token_begin, token_end, kv_begin, kv_end, scratch, nullptr);
    }
  tile_over<V, KvDtype::F32>(c, token_begin, token_end, kv_begin, kv_end, scratch, stage_for<V>(d));
}

}  // namespace attention

}  // namespace parley::cpu::simd
