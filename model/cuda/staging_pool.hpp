// Device buffers for KV transfers (model/kv_link.hpp, and PD over TCP through the host), kept for reuse up to
// a budget, so a transfer seldom allocates. Ops::alloc_staging's memory is stream-ordered on CUDA: freeing it
// never waits for the device (cudaFree would, and hang behind an NCCL kernel waiting for its peer).
// No CUDA header: DeviceLlama uses it over any Ops type's Buffer.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "model/device_model.hpp"

namespace parley::cuda {

template <class Buffer>
class StagingPool {
 public:
  explicit StagingPool(size_t keep_bytes) : keep_bytes_(keep_bytes) {}

  // Staging of `floats`, in the smallest free buffer that holds them, else in a new one from alloc(bytes)
  // (if that fails, the free buffers are released and it is tried once more).
  template <class Alloc>
  std::unique_ptr<KvStaging> take(int64_t floats, Alloc&& alloc) {
    const size_t bytes = size_t(floats) * 4;
    auto& free = shared_->free;
    auto best = free.end();
    for (auto it = free.begin(); it != free.end(); ++it)
      if (it->bytes() >= bytes && (best == free.end() || it->bytes() < best->bytes())) best = it;
    Buffer b;
    if (best != free.end()) {
      b = std::move(*best), free.erase(best);
    } else {
      try {
        b = alloc(bytes);
      } catch (const std::exception&) {
        if (free.empty()) throw;
        free.clear();  // the kept buffers are all too small for this one: their memory back, then once more
        b = alloc(bytes);
      }
    }
    return std::make_unique<Staging>(std::move(b), floats, shared_, keep_bytes_);
  }
  size_t num_free() const { return shared_->free.size(); }

 private:
  struct Shared {
    std::vector<Buffer> free;
  };
  // Hands its buffer back to the pool when the transfer is done with it.
  class Staging final : public KvStaging {
   public:
    Staging(Buffer b, int64_t floats, std::shared_ptr<Shared> pool, size_t keep_bytes)
        : b_(std::move(b)), floats_(floats), pool_(std::move(pool)), keep_bytes_(keep_bytes) {}
    ~Staging() override {
      size_t kept = b_.bytes();
      for (const Buffer& f : pool_->free) kept += f.bytes();
      if (kept <= keep_bytes_) pool_->free.push_back(std::move(b_));  // else freed
    }
    float* data() override { return b_.template get<float>(); }
    int64_t size() const override { return floats_; }

   private:
    Buffer b_;
    int64_t floats_;
    std::shared_ptr<Shared> pool_;
    size_t keep_bytes_;
  };
  size_t keep_bytes_;  // free buffers kept up to this much
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

}  // namespace parley::cuda
