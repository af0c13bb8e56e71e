// Portable kernels: the same templates with one lane, for CPUs without AVX2.
#include <bit>
#include <cmath>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/simd_impl.hpp"

namespace parley::cpu {
namespace {

struct Scalar {
  using T = float;
  static constexpr int W = 1;
  static constexpr int MR = 2;
  static constexpr int kSumAccumulators = 8;  // value accumulators the weighted sum keeps in registers
  static T zero() { return 0.0f; }
  static T set1(float a) { return a; }
  static T load(const float* p) { return *p; }
  static void store(float* p, T v) { *p = v; }
  static T fma(T a, T b, T c) { return a * b + c; }
  static T add(T a, T b) { return a + b; }
  static T sub(T a, T b) { return a - b; }
  static T mul(T a, T b) { return a * b; }
  static T div(T a, T b) { return a / b; }
  static T max(T a, T b) { return a > b ? a : b; }
  static T round(T a) { return std::nearbyint(a); }
  static T pow2(T n) { return std::bit_cast<float>(uint32_t(static_cast<int>(n) + 127) << 23); }
  static T zero_below(T x, T lo, T v) { return x >= lo ? v : 0.0f; }
  static float hsum(T v) { return v; }
  static T hsum_each(const T* a) { return a[0]; }
  static T load_f16(const uint16_t* p) { return f16_to_f32(*p); }
  static T load_bf16(const uint16_t* p) { return bf16_to_f32(*p); }
};

}  // namespace

SimdKernels generic_kernels() { return simd::make_kernels<Scalar>(Isa::Generic, &simd::to_f16_scalar); }

}  // namespace parley::cpu
