// Device memory owned by one object (cudaMalloc / cudaFree, or stream-ordered: cudaMallocAsync /
// cudaFreeAsync), move-only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>

#include "kernels/cuda/check.hpp"

namespace parley::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes) PARLEY_CUDA_CHECK(cudaMalloc(&data_, bytes));
  }
  // Memory freed without a device-wide synchronization: cudaFree waits for every stream, and would hang
  // behind an NCCL kernel waiting for its peer. Usable from any stream once this returns.
  static DeviceBuffer stream_ordered(size_t bytes, cudaStream_t stream) {
    DeviceBuffer b;
    b.bytes_ = bytes, b.stream_ = stream;
    if (bytes) {
      PARLEY_CUDA_CHECK(cudaMallocAsync(&b.data_, bytes, stream));
      PARLEY_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    return b;
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        bytes_(std::exchange(o.bytes_, 0)),
        stream_(std::exchange(o.stream_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    std::swap(stream_, o.stream_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (!data_) return;  // no throw from a destructor; a failure here means the context is gone
    if (stream_)
      cudaFreeAsync(data_, stream_);
    else
      cudaFree(data_);
  }

  size_t bytes() const { return bytes_; }
  template <class T = void>
  T* get() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;  // set: freed on this stream (cudaFreeAsync)
};

}  // namespace parley::cuda
