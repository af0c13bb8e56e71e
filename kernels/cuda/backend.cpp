#include "kernels/cuda/ops.hpp"

#include <algorithm>
#include <utility>

namespace parley::cuda {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "float32";
    case DType::BF16:
      return "bfloat16";
    case DType::F16:
      return "float16";
  }
  return "?";
}

DType parse_dtype(const std::string& name) {
  if (name == "float32") return DType::F32;
  if (name == "bfloat16") return DType::BF16;
  if (name == "float16") return DType::F16;
  throw std::invalid_argument("dtype must be float32, bfloat16 or float16, got '" + name + "'");
}

CudaBackend::CudaBackend() {
  try {
    PARLEY_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    PARLEY_CUDA_CHECK(cublasCreate(&cublas_));
    PARLEY_CUDA_CHECK(cublasSetStream(cublas_, stream_));
    // Plain F32 math for F32 weights (no TF32): the CPU reference's precision.
    PARLEY_CUDA_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
    cublas_workspace_ = DeviceBuffer(size_t(32) << 20);
    PARLEY_CUDA_CHECK(cublasSetWorkspace(cublas_, cublas_workspace_.get(), cublas_workspace_.bytes()));
  } catch (...) {
    release();  // the destructor does not run for a constructor that throws
    throw;
  }
}

CudaBackend::~CudaBackend() { release(); }

void CudaBackend::release() noexcept {
  if (cublas_) cublasDestroy(std::exchange(cublas_, nullptr));
  if (stream_) cudaStreamDestroy(std::exchange(stream_, nullptr));
}

void CudaBackend::synchronize() const { PARLEY_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void CudaBackend::reserve_matmul(int max_rows, int max_k, int max_n) {
  const size_t rows = size_t((max_rows + kGemmRows - 1) / kGemmRows) * kGemmRows;
  if (rows * max_k * 4 > staged_x_.bytes()) staged_x_ = DeviceBuffer(rows * max_k * 4);
  if (size_t(kGemmRows) * max_n * 4 > chunk_out_.bytes()) chunk_out_ = DeviceBuffer(size_t(kGemmRows) * max_n * 4);
  max_rows_ = std::max(max_rows_, max_rows), max_k_ = std::max(max_k_, max_k), max_n_ = std::max(max_n_, max_n);
}

}  // namespace parley::cuda
