// The sampler's portable kernels: the scalar definitions themselves (compiled with -ffp-contract=off).
#include "kernels/cpu/sampling_kernels.hpp"
#include "kernels/sampling_math.hpp"

namespace parley::cpu {
namespace {

float cdf_total(const float* w, int n) {
  return sampling::cdf_total([&](int i) { return w[i]; }, n);
}
double cdf_total_double(const float* w, int n) {
  return sampling::cdf_total<double>([&](int i) { return w[i]; }, n);
}
int inverse_cdf(const float* w, int n, float target) {
  return sampling::inverse_cdf([&](int i) { return w[i]; }, n, target);
}

}  // namespace

SamplingKernels avx2_sampling_kernels();    // sampling_avx2.cpp
SamplingKernels avx512_sampling_kernels();  // sampling_avx512.cpp

SamplingKernels sampling_kernels(Isa isa) {
  switch (checked_isa(isa)) {
    case Isa::Amx: {  // no tile in sampling: the AVX-512 kernels
      SamplingKernels k = avx512_sampling_kernels();
      k.isa = Isa::Amx;
      return k;
    }
    case Isa::Avx512:
      return avx512_sampling_kernels();
    case Isa::Avx2:
      return avx2_sampling_kernels();
    default:
      return {Isa::Generic,          &sampling::max_value, &sampling::argmax, &sampling::exp_scaled,
              &sampling::zero_below, &cdf_total,           &cdf_total_double, &inverse_cdf};
  }
}

const SamplingKernels& best_sampling_kernels() {
  static const SamplingKernels kernels = sampling_kernels(Isa::Auto);
  return kernels;
}

}  // namespace parley::cpu
