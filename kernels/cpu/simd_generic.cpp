// Portable kernels: the same templates with one lane, for CPUs without AVX2.
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/simd_impl.hpp"

namespace parley::cpu {
namespace {

struct Scalar {
  using T = float;
  static constexpr int W = 1;
  static constexpr int MR = 2;
  static T zero() { return 0.0f; }
  static T set1(float a) { return a; }
  static T load(const float* p) { return *p; }
  static void store(float* p, T v) { *p = v; }
  static T fma(T a, T b, T c) { return a * b + c; }
  static float hsum(T v) { return v; }
};

}  // namespace

SimdKernels generic_kernels() {
  return {Isa::Generic, &simd::matmul<Scalar>, &simd::dot<Scalar>, &simd::axpy<Scalar>,
          &simd::fma_probe<Scalar>, Scalar::W};
}

}  // namespace parley::cpu
