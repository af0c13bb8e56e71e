// Device memory owned by one object (cudaMalloc / cudaFree), move-only.
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
  DeviceBuffer(DeviceBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (data_) cudaFree(data_);  // no throw from a destructor; a failure here means the context is gone
  }

  size_t bytes() const { return bytes_; }
  template <class T = void>
  T* get() const { return static_cast<T*>(data_); }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace parley::cuda
