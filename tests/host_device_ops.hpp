// The CUDA path on the host: DeviceLlama's Ops with host memory, the CUDA kernels' own bodies run one index at
// a time (what each GPU thread runs), the CPU reference GEMM, and "graphs" that record the captured pass and
// run it again on replay, with a pretend device size for the memory sizing. This checks the CUDA model's orchestration
// (buffers, padding, graph inputs, KV layout) and every kernel body against the CPU backend without a GPU; launches and
// cuBLAS need one.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/reference.hpp"
#include "model/cuda/cuda_model.hpp"
#include "kernels/cuda/gather_rows.hpp"
#include "kernels/cuda/kv_write.hpp"
#include "kernels/cuda/paged_attention.hpp"
#include "kernels/cuda/residual_add.hpp"
#include "kernels/cuda/rmsnorm.hpp"
#include "kernels/cuda/rope.hpp"
#include "kernels/cuda/sampling.hpp"
#include "kernels/cuda/spec_verify.hpp"
#include "kernels/cuda/glu.hpp"
#include "kernels/cuda/moe.hpp"
#include "kernels/cuda/pointwise.hpp"

namespace parley::test {

// Runs body(i) for i in [0, n): a kernel launch, one index after another.
template <class F>
void host_launch(int64_t n, F body) {
  for (int64_t i = 0; i < n; ++i) body(i);
}

class HostOps {
  using Usage = std::shared_ptr<int64_t>;
  // Counts `bytes` in use for as long as it (or what it moved into) lives.
  static std::shared_ptr<void> charge(const Usage& usage, int64_t bytes) {
    *usage += bytes;
    return std::shared_ptr<void>(nullptr, [usage, bytes](void*) { *usage -= bytes; });
  }

 public:
  class Buffer {
   public:
    Buffer() = default;
    Buffer(size_t bytes, const Usage& usage)
        : data_(bytes ? new std::byte[bytes]() : nullptr), bytes_(bytes), charge_(charge(usage, int64_t(bytes))) {}
    template <class T = void>
    T* get() const {
      return reinterpret_cast<T*>(data_.get());
    }
    size_t bytes() const { return bytes_; }

   private:
    std::unique_ptr<std::byte[]> data_;
    size_t bytes_ = 0;
    std::shared_ptr<void> charge_;
  };
  struct Matrix {
    int N = 0, K = 0;
    std::vector<float> w;
  };
  struct Graph {
    std::function<void()> pass;
    std::shared_ptr<void> charge;  // the graph's own memory
  };

  // device_bytes 0: no device size, so the KV needs num_blocks; graph_bytes: what each captured graph holds.
  explicit HostOps(int64_t device_bytes = 0, int64_t graph_bytes = 0)
      : device_bytes_(device_bytes), graph_bytes_(graph_bytes) {}
  // The bytes in use, shared: it outlives these ops (and the model owning them).
  Usage usage() const { return usage_; }

  void activate() const {}
  void synchronize() const {}
  std::string name() const { return "host-emulated-cuda"; }
  // Past the pretend device size, an allocation fails as cudaMalloc would.
  Buffer alloc(size_t bytes) const {
    if (device_bytes_ > 0 && *usage_ + int64_t(bytes) > device_bytes_)
      throw std::runtime_error("host emulation: out of device memory (" + std::to_string(bytes) + " bytes asked, " +
                               std::to_string(device_bytes_ - *usage_) + " free)");
    return Buffer(bytes, usage_);
  }
  Buffer alloc_staging(size_t bytes) const { return alloc(bytes); }
  // Shrinks (or grows) the pretend device: with `free_bytes` left over what is in use now.
  void leave_free(int64_t free_bytes) { device_bytes_ = *usage_ + free_bytes; }
  cuda::DeviceMemory memory() const {
    if (device_bytes_ == 0) throw std::invalid_argument("host emulation: give num_blocks");
    return {device_bytes_ - *usage_, device_bytes_};
  }
  void upload(void* dst, const void* src, size_t bytes) const { std::memcpy(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) const { std::memcpy(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) const { std::memcpy(dst, src, bytes); }
  void zero(void* dst, size_t bytes) const { std::memset(dst, 0, bytes); }
  Matrix upload_matrix(const float* w, int N, int K) const { return {N, K, std::vector<float>(w, w + size_t(N) * K)}; }
  void reserve_matmul(int, int, int) {}
  Graph capture(const std::function<void()>& pass) { return {pass, charge(usage_, graph_bytes_)}; }
  void replay(const Graph& g) { g.pass(); }

  void matmul(const float* x, const Matrix& w, float* out, int M) const {
    cpu::reference::matmul(x, w.w.data(), out, M, w.N, w.K);
  }
  void rmsnorm(const float* x, const float* weight, float* out, int M, int dim, float eps) const {
    host_launch(M, [&](int64_t m) { cuda::body::rmsnorm_row(x + m * dim, weight, out + m * dim, dim, eps); });
  }
  void rope(float* x, const int* positions, int M, int n_heads, int head_dim, const cpu::RopeSpec& spec) const {
    host_launch(int64_t(M) * n_heads * (cuda::body::rotary_dims(spec, head_dim) / 2),
                [&](int64_t i) { cuda::body::rope_at(x, positions, n_heads, head_dim, spec, i); });
  }
  void rope(float* x, const int* positions, int M, int n_heads, int head_dim, float theta, RopeLayout layout) const {
    rope(x, positions, M, n_heads, head_dim, cpu::RopeSpec{theta, layout});
  }
  void swiglu(const float* gate, const float* up, float* out, int64_t count) const {
    host_launch(count, [&](int64_t i) { cuda::body::swiglu_at(gate, up, out, i); });
  }
  void geglu(const float* gate, const float* up, float* out, int64_t count) const {
    host_launch(count, [&](int64_t i) { cuda::body::geglu_at(gate, up, out, i); });
  }
  void add_bias(float* y, const float* bias, int rows, int width) const {
    host_launch(int64_t(rows) * width, [&](int64_t i) { cuda::body::add_bias_at(y, bias, width, i); });
  }
  void scale(float* x, float s, int64_t count) const {
    host_launch(count, [&](int64_t i) { cuda::body::scale_at(x, s, i); });
  }
  void softcap(float* x, float cap, int64_t count) const {
    host_launch(count, [&](int64_t i) { cuda::body::softcap_at(x, cap, i); });
  }
  void embedding(const float* table, const int* tokens, int M, int dim, float* out) const {
    gather_rows(table, tokens, M, dim, out);
  }
  void kv_write(const cpu::KvLayerView& kv, const float* k, const float* v, const int64_t* slots, int M) const {
    with_kv_dtype(kv.dtype, [&](auto d) {
      host_launch(int64_t(M) * kv.kv_dim, [&](int64_t i) {
        cuda::body::kv_write_at<decltype(d)::value>(kv.keys, kv.values, kv.kv_dim, k, v, slots, i);
      });
    });
  }
  void paged_attention(const float* q, const cpu::KvLayerView& kv, const cpu::AttentionMetadata& meta, int n_heads,
                       int n_kv_heads, int head_dim, float* out, const cpu::AttentionSpec& spec = {}) const {
    with_kv_dtype(kv.dtype, [&](auto d) {
      attention_as<decltype(d)::value>(q, kv, meta, n_heads, n_kv_heads, head_dim, out, spec);
    });
  }
  template <KvDtype D>
  void attention_as(const float* q, const cpu::KvLayerView& kv, const cpu::AttentionMetadata& meta, int n_heads,
                    int n_kv_heads, int head_dim, float* out, const cpu::AttentionSpec& spec) const {
    namespace body = cuda::body;
    if (head_dim > body::kMaxHeadDim) throw std::invalid_argument("CUDA paged attention supports head_dim up to 256");
    using T = typename KvElem<D>::T;
    const body::PagedKv<D> pkv{kv.keys_as<const T>(), kv.values_as<const T>(), kv.block_size, kv.kv_dim};
    const body::AttentionRows rows{meta.positions, meta.token_seq, meta.block_tables, meta.max_blocks_per_seq};
    const body::AttentionPlan plan =
        body::plan_attention(meta.max_blocks_per_seq * kv.block_size, n_heads, split_, scratch_rows_);
    const int64_t rows_used = std::min<int64_t>(plan.tokens_per_chunk, meta.num_tokens) * n_heads * plan.splits;
    std::vector<float> acc(size_t(rows_used) * head_dim, NAN), max(size_t(rows_used), NAN), sum(size_t(rows_used), NAN);
    const body::AttentionPartials parts{acc.data(), max.data(), sum.data(), split_, plan.splits};
    for (int64_t first = 0; first < meta.num_tokens; first += plan.tokens_per_chunk) {
      const int64_t tokens = std::min<int64_t>(plan.tokens_per_chunk, meta.num_tokens - first);
      const int64_t n = tokens * n_heads * plan.splits;
      if (head_dim <= 64)  // CudaBackend's kernels, by accumulator bound
        host_launch(n, [&](int64_t i) {
          body::attention_split_at<64, D>(q, pkv, rows, n_heads, n_kv_heads, head_dim, parts, first, i, spec);
        });
      else if (head_dim <= 128)
        host_launch(n, [&](int64_t i) {
          body::attention_split_at<128, D>(q, pkv, rows, n_heads, n_kv_heads, head_dim, parts, first, i, spec);
        });
      else
        host_launch(n, [&](int64_t i) {
          body::attention_split_at<256, D>(q, pkv, rows, n_heads, n_kv_heads, head_dim, parts, first, i, spec);
        });
      host_launch(tokens * n_heads * head_dim,
                  [&](int64_t i) { body::attention_combine_at(rows, n_heads, head_dim, parts, first, out, i, spec); });
    }
  }
  // What CudaBackend sizes; attention_splits changes the split length and the scratch, for the tests.
  void reserve_attention(int max_tokens, int n_heads, int head_dim, int max_positions) {
    if (head_dim > cuda::body::kMaxHeadDim)
      throw std::invalid_argument("CUDA paged attention supports head_dim up to 256");
    scratch_rows_ = cuda::body::attention_scratch_rows(max_tokens, n_heads, max_positions, split_);
  }
  void attention_splits(int split, int64_t scratch_rows) { split_ = split, scratch_rows_ = scratch_rows; }
  void add(float* y, const float* x, int64_t count) const {
    host_launch(count, [&](int64_t i) { cuda::body::add_at(y, x, i); });
  }
  void sample(const float* logits, int vocab, const cuda::body::SampleParams* params, int rows, int* tokens) const {
    host_launch(rows, [&](int64_t r) { tokens[r] = cuda::body::sample_row(logits + r * vocab, vocab, params[r]); });
  }
  void route(float* logits, int M, const moe::Routing& r, int* experts, float* weights) const {
    host_launch(M, [&](int64_t t) { cuda::body::route_at(logits, r, experts, weights, t); });
  }
  void expert_matmul(const float* x, bool per_slot, const Matrix& w, int n, const int* experts, int M, int k,
                     float* out) const {
    const float* p = w.w.data();
    host_launch(int64_t(M) * k * n, [&](int64_t i) {
      cuda::body::expert_dot_at(
          x, per_slot, [p](int64_t j) { return p[j]; }, n, w.K, experts, k, out, i);
    });
  }
  void moe_sum(const float* y, const float* weights, int M, int k, int dim, float* out) const {
    host_launch(int64_t(M) * dim, [&](int64_t i) { cuda::body::moe_sum_at(y, weights, k, dim, out, i); });
  }
  void gated_add(float* out, const float* y, const float* gate, int M, int dim) const {
    host_launch(int64_t(M) * dim, [&](int64_t i) { cuda::body::gated_add_at(out, y, gate, dim, i); });
  }
  void gather_rows(const float* src, const int* rows, int S, int width, float* dst) const {
    host_launch(int64_t(S) * width, [&](int64_t i) { cuda::body::gather_rows_at(src, rows, width, dst, i); });
  }

 private:
  int64_t device_bytes_, graph_bytes_;
  int split_ = cuda::body::kSplitPositions;
  int64_t scratch_rows_ = cuda::body::kScratchRows;
  Usage usage_ = std::make_shared<int64_t>(0);
};

}  // namespace parley::test
