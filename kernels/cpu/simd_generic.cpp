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
  static T load_f16(const uint16_t* p) { return f16_to_f32(*p); }
  static T load_bf16(const uint16_t* p) { return bf16_to_f32(*p); }
};

}  // namespace

SimdKernels generic_kernels() { return simd::make_kernels<Scalar>(Isa::Generic, &simd::to_f16_scalar); }

}  // namespace parley::cpu
