// The sampler's AVX-512 kernels (compiled with -mavx512f -ffp-contract=off; only called when the CPU has it).
#include "kernels/cpu/simd_sampling.hpp"
#include "kernels/cpu/vec_avx512.hpp"

namespace parley::cpu {

SamplingKernels avx512_sampling_kernels() { return simd::make_sampling_kernels<Avx512>(Isa::Avx512); }

}  // namespace parley::cpu
