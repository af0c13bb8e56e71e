// Error checks for the CUDA runtime, cuBLAS and NCCL: every call and every kernel launch is checked, and a
// failure throws CudaError naming the call, the file and the line (never a silent wrong result).
#pragma once
#include <stdexcept>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace parley::cuda {

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(cudaError_t status, const char* what, const char* file, int line);
void check(cublasStatus_t status, const char* what, const char* file, int line);
// After a kernel launch: a bad configuration shows up in cudaGetLastError, not in the launch itself. A failed
// call checked above clears it as it throws, and calls whose failure is expected (cudaEventQuery's
// cudaErrorNotReady) clear it themselves, so only the launch's own error shows up here.
void check_launch(const char* kernel, const char* file, int line);

}  // namespace parley::cuda

#define PARLEY_CUDA_CHECK(expr) ::parley::cuda::check((expr), #expr, __FILE__, __LINE__)
#define PARLEY_CUDA_CHECK_LAUNCH(name) ::parley::cuda::check_launch((name), __FILE__, __LINE__)
