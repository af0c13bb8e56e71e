// AVX2+FMA kernels (compiled with -mavx2 -mfma; only called when the CPU reports both).
#include <immintrin.h>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/simd_impl.hpp"
#include "kernels/cpu/vec_avx2.hpp"

namespace parley::cpu {
namespace {

void to_f16(const float* x, uint16_t* out, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  simd::to_f16_scalar(x + i, out + i, n - i);
}

}  // namespace

SimdKernels avx2_kernels() { return simd::make_kernels<Avx2>(Isa::Avx2, &to_f16); }

}  // namespace parley::cpu
