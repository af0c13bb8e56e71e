// GEMM through cuBLAS: F32 weights with cublasSgemm-equivalent math, BF16/F16 weights with the activations
// converted to the weight type and F32 accumulation (cublasGemmEx, CUBLAS_COMPUTE_32F).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <vector>

#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.hpp"

namespace parley::cuda {
namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::F32:
      return CUDA_R_32F;
    case DType::BF16:
      return CUDA_R_16BF;
    case DType::F16:
      return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

__device__ inline void convert(float x, __nv_bfloat16* y) { *y = __float2bfloat16_rn(x); }
__device__ inline void convert(float x, __half* y) { *y = __float2half_rn(x); }

template <class T>
void convert_on_device(const float* x, void* out, int64_t n, cudaStream_t stream) {
  T* y = static_cast<T*>(out);
  launch_1d("convert_activations", n, stream, [=] __device__(int64_t i) { convert(x[i], y + i); });
}

}  // namespace

DeviceMatrix CudaBackend::upload_matrix(const float* w, int N, int K, DType dtype) const {
  DeviceMatrix m;
  m.N = N, m.K = K, m.dtype = dtype;
  const size_t n = size_t(N) * K;
  // On this backend's stream, then waited for: a plain cudaMemcpy goes on the legacy stream, which a
  // non-blocking stream's kernels do not wait for, and may return before its last DMA lands.
  const auto copy = [&](const void* src, size_t bytes) {
    PARLEY_CUDA_CHECK(cudaMemcpyAsync(m.data.get(), src, bytes, cudaMemcpyHostToDevice, stream_));
    synchronize();
  };
  if (dtype == DType::F32) {
    m.data = DeviceBuffer(n * sizeof(float));
    copy(w, n * sizeof(float));
    return m;
  }
  m.data = DeviceBuffer(n * 2);
  if (dtype == DType::BF16) {
    std::vector<__nv_bfloat16> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = __float2bfloat16_rn(w[i]);
    copy(h.data(), n * 2);
  } else {
    std::vector<__half> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = __float2half_rn(w[i]);
    copy(h.data(), n * 2);
  }
  return m;
}

void CudaBackend::matmul(const float* x, const DeviceMatrix& w, float* out, int M) const {
  if (M <= 0) return;
  if (M > max_rows_ || w.K > max_k_ || w.N > max_n_)
    throw std::logic_error("CudaBackend::matmul: reserve_matmul was sized for a smaller GEMM");
  const int chunks = (M + kGemmRows - 1) / kGemmRows, padded = chunks * kGemmRows;
  const size_t elem = w.dtype == DType::F32 ? 4 : 2;
  // The activations, padded with zero rows to whole chunks (and converted to the weight type).
  const char* b = reinterpret_cast<const char*>(x);
  if (w.dtype != DType::F32 || padded != M) {
    char* staged = staged_x_.get<char>();
    const int64_t n = int64_t(M) * w.K;
    if (w.dtype == DType::F32)
      PARLEY_CUDA_CHECK(cudaMemcpyAsync(staged, x, size_t(n) * 4, cudaMemcpyDeviceToDevice, stream_));
    else if (w.dtype == DType::BF16)
      convert_on_device<__nv_bfloat16>(x, staged, n, stream_);
    else
      convert_on_device<__half>(x, staged, n, stream_);
    if (padded > M)
      PARLEY_CUDA_CHECK(cudaMemsetAsync(staged + size_t(n) * elem, 0, size_t(padded - M) * w.K * elem, stream_));
    b = staged;
  }
  const float alpha = 1.0f, beta = 0.0f;
  const cudaDataType_t t = cuda_type(w.dtype);
  // Row-major out[R][N] is column-major out^T (N x R) = W (K x N column-major, transposed) * x^T.
  for (int c = 0; c < chunks; ++c) {
    const int rows = std::min(kGemmRows, M - c * kGemmRows);
    float* dst = rows == kGemmRows ? out + size_t(c) * kGemmRows * w.N : chunk_out_.get<float>();
    PARLEY_CUDA_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, w.N, kGemmRows, w.K, &alpha, w.data.get(), t, w.K,
                                   b + size_t(c) * kGemmRows * w.K * elem, t, w.K, &beta, dst, CUDA_R_32F, w.N,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    if (rows != kGemmRows)
      PARLEY_CUDA_CHECK(cudaMemcpyAsync(out + size_t(c) * kGemmRows * w.N, dst, size_t(rows) * w.N * 4,
                                        cudaMemcpyDeviceToDevice, stream_));
  }
}

}  // namespace parley::cuda
