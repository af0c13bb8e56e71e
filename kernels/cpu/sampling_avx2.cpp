// The sampler's AVX2 kernels (compiled with -mavx2 -mfma -ffp-contract=off; only called when the CPU has both).
#include "kernels/cpu/simd_sampling.hpp"
#include "kernels/cpu/vec_avx2.hpp"

namespace parley::cpu {

SamplingKernels avx2_sampling_kernels() { return simd::make_sampling_kernels<Avx2>(Isa::Avx2); }

}  // namespace parley::cpu
