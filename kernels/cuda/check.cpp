#include "kernels/cuda/check.hpp"

namespace parley::cuda {

namespace {
[[noreturn]] void fail(const std::string& why, const char* what, const char* file, int line) {
  throw CudaError(std::string(what) + " failed at " + file + ":" + std::to_string(line) + ": " + why);
}
}  // namespace

void check(cudaError_t status, const char* what, const char* file, int line) {
  if (status == cudaSuccess) return;
  // The runtime also keeps it as the last error: reported here, it must not fail the next launch check (a
  // failed cudaMalloc for staging is survivable; the next pass is not to blame).
  cudaGetLastError();
  fail(std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")", what, file, line);
}

void check(cublasStatus_t status, const char* what, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const cudaError_t launch =
      cudaGetLastError();  // a kernel cuBLAS failed to launch: reported here, not at the next check
  fail(std::string(cublasGetStatusName(status)) + " (" + cublasGetStatusString(status) + ")" +
           (launch == cudaSuccess ? "" : std::string(", ") + cudaGetErrorName(launch)),
       what, file, line);
}

void check_launch(const char* kernel, const char* file, int line) {
  check(cudaGetLastError(), kernel, file, line);  // and reset: a launch error that is not sticky reports once
}

}  // namespace parley::cuda
