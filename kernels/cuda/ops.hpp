// The CUDA backend: the CPU backend's op set (kernels/cpu/ops.hpp) with the same signatures, over device
// pointers, queued on one stream. Every kernel is a body from kernels/cuda/<op>.hpp run one thread per index,
// so each row's result is independent of the other rows (batch invariance); the GEMM is cuBLAS.
#pragma once
#include <cstdint>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "kernels/cpu/ops.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/sampling.hpp"
#include "kernels/moe_routing.hpp"
#include "kernels/rope_layout.hpp"

namespace parley::cuda {

enum class DType { F32, BF16, F16 };
const char* dtype_name(DType t);
DType parse_dtype(const std::string& name);  // "float32", "bfloat16", "float16"; throws otherwise

// A weight matrix [N][K] in device memory, row-major, in its storage type.
struct DeviceMatrix {
  int N = 0, K = 0;
  DType dtype = DType::F32;
  DeviceBuffer data;
};

class CudaBackend {
 public:
  // Uses the current device; the stream and the cuBLAS handle are this backend's own.
  CudaBackend();
  ~CudaBackend();
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  cudaStream_t stream() const { return stream_; }
  void synchronize() const;

  // Uploads w[N][K] (host floats) converted to dtype.
  DeviceMatrix upload_matrix(const float* w, int N, int K, DType dtype) const;
  // The matmul's scratch (rows padded to kGemmRows, activations converted for BF16/F16 weights, the last
  // chunk's output), sized before any graph capture: no allocation may happen while capturing.
  void reserve_matmul(int max_rows, int max_k, int max_n);

  // out[M][N] = x[M][K] * w[N][K]^T, F32 accumulation (cuBLAS), in chunks of exactly kGemmRows rows (the
  // last one padded): cuBLAS picks its algorithm by shape, so a fixed shape keeps each row's reduction
  // order whatever the batch size (batch invariance; a decode row pays for a 64-row GEMM, which streams
  // the same weights).
  static constexpr int kGemmRows = 64;
  void matmul(const float* x, const DeviceMatrix& w, float* out, int M) const;
  void rmsnorm(const float* x, const float* weight, float* out, int M, int dim, float eps) const;
  void rope(float* x, const int* positions, int M, int n_heads, int head_dim, const cpu::RopeSpec& spec) const;
  void rope(float* x, const int* positions, int M, int n_heads, int head_dim, float theta, RopeLayout layout) const {
    rope(x, positions, M, n_heads, head_dim, cpu::RopeSpec{theta, layout});
  }
  void swiglu(const float* gate, const float* up, float* out, int64_t count) const;
  void geglu(const float* gate, const float* up, float* out, int64_t count) const;
  // y[m] += bias for each of `rows` rows of `width` values.
  void add_bias(float* y, const float* bias, int rows, int width) const;
  void scale(float* x, float s, int64_t count) const;
  // x = cap * tanh(x / cap), cap > 0.
  void softcap(float* x, float cap, int64_t count) const;
  // out[m] = table[tokens[m]]: a row gather.
  void embedding(const float* table, const int* tokens, int M, int dim, float* out) const {
    gather_rows(table, tokens, M, dim, out);
  }
  // Slots < 0 (a padded batch's filler tokens) write nothing.
  void kv_write(const cpu::KvLayerView& kv, const float* k, const float* v, const int64_t* slots, int M) const;
  // The attention's scratch (the splits' partial softmaxes, kernels/cuda/paged_attention.hpp), sized before
  // any graph capture; a pass whose partials do not fit runs in chunks of tokens.
  void reserve_attention(int max_tokens, int n_heads, int head_dim, int max_positions);
  void paged_attention(const float* q, const cpu::KvLayerView& kv, const cpu::AttentionMetadata& meta, int n_heads,
                       int n_kv_heads, int head_dim, float* out, const cpu::AttentionSpec& spec = {}) const;
  // y += x over count values (the residual connection).
  void add(float* y, const float* x, int64_t count) const;
  // dst[s] = src[rows[s]] for S rows of width values (token embeddings, the rows the head or the sampler needs).
  void gather_rows(const float* src, const int* rows, int S, int width, float* dst) const;
  // Mixtures of experts (kernels/cuda/moe.hpp): each token's routing, in place of its logits [M][n_experts];
  // out[M * k][n] through each slot's expert of w, the experts' [n][K] matrices stacked, x per token or per slot;
  // out[M][dim] = each token's slots weighted and summed; out += y * sigmoid(gate[t]).
  void route(float* logits, int M, const moe::Routing& r, int* experts, float* weights) const;
  void expert_matmul(const float* x, bool per_slot, const DeviceMatrix& w, int n, const int* experts, int M, int k,
                     float* out) const;
  void moe_sum(const float* y, const float* weights, int M, int k, int dim, float* out) const;
  void gated_add(float* out, const float* y, const float* gate, int M, int dim) const;
  // tokens[r] for each of `rows` logits rows (vocab wide), with params[r] in device memory.
  void sample(const float* logits, int vocab, const body::SampleParams* params, int rows, int* tokens) const;
  // accepted[r]: the drafts of row r that stand, from sampled[r][1 + k] and drafts[r][k].
  void verify_exact(const int* sampled, const int* drafts, int k, int rows, int* accepted) const;

 private:
  void release() noexcept;  // the cuBLAS handle and the stream
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  DeviceBuffer cublas_workspace_;  // set once, so cuBLAS never allocates during a graph capture
  DeviceBuffer staged_x_;          // x padded to whole chunks, converted for BF16/F16 weights
  DeviceBuffer chunk_out_;         // the last, padded chunk's output
  int max_rows_ = 0, max_k_ = 0, max_n_ = 0;
  DeviceBuffer attn_acc_, attn_max_, attn_sum_;  // the attention's partials
  int64_t attn_rows_ = 0;
  int attn_head_dim_ = 0;
};

}  // namespace parley::cuda
