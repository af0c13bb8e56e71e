// The GPU suite's runner: without a CUDA device it prints why and exits 77, which ctest reports as skipped.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "kernels/cuda/cuda_model.hpp"

int main(int argc, char** argv) {
  std::string why;
  if (parley::cuda::device_count(&why) == 0) {
    std::printf("skipped: the GPU tests need a CUDA device (%s)\n", why.c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
