// The CUDA entry points of a build without nvcc: --device cuda gets a clear error instead of a missing symbol.
#include <stdexcept>

#include "model/cuda/cuda_model.hpp"

namespace parley::cuda {

bool compiled() { return false; }

int device_count(std::string* why) {
  if (why) *why = "this build has no CUDA backend (nvcc was not found when it was configured)";
  return 0;
}

std::unique_ptr<DeviceModel> make_model(const LlamaConfig&, const LlamaWeights&, const CudaModelOptions&) {
  throw std::invalid_argument(
      "--device cuda: this build has no CUDA backend (nvcc was not found when it was configured)");
}

}  // namespace parley::cuda
