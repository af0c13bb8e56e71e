// A build without NCCL (or without CUDA): --kv-transport nccl gets a clear error instead of a missing symbol.
#include <stdexcept>

#include "model/cuda/cuda_model.hpp"

namespace parley::cuda {

std::shared_ptr<KvLinkFactory> nccl_link_factory(int) {
  throw std::invalid_argument(
      "--kv-transport nccl: this build has no NCCL (it was not found when the build was configured)");
}

}  // namespace parley::cuda
