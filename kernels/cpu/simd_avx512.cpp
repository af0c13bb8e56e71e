// AVX-512F kernels (compiled with -mavx512f; only called when the CPU reports AVX-512F).
#include <immintrin.h>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/simd_impl.hpp"
#include "kernels/cpu/vec_avx512.hpp"

namespace parley::cpu {
namespace {

void to_f16(const float* x, uint16_t* out, int n) {
  int i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  simd::to_f16_scalar(x + i, out + i, n - i);
}

}  // namespace

SimdKernels avx512_kernels() { return simd::make_kernels<Avx512>(Isa::Avx512, &to_f16); }

}  // namespace parley::cpu
