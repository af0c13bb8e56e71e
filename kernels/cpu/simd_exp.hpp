// The vector exp shared by attention's softmax, SwiGLU and the sampler (kernels/sampling_math.hpp holds its
// scalar twin with fused multiply-adds, which the sampler's kernels match bit for bit).
#pragma once

namespace parley::cpu::simd {

// exp(x) for x <= 0, elementwise (Cephes' expf: 2^n times a degree-7 polynomial on [-ln2/2, ln2/2]; within
// 2 ulp of std::exp, and 0 below -87 where std::exp would be denormal).
template <class V>
[[gnu::always_inline]] inline typename V::T exp_nonpositive(typename V::T x) {
  using T = typename V::T;
  const T lo = V::set1(-87.0f);
  const T xc = V::max(x, lo);
  const T n = V::round(V::mul(xc, V::set1(1.44269504088896341f)));
  T r = V::fma(n, V::set1(-0.693359375f), xc);  // x - n ln2 in two steps: the first is exact
  r = V::fma(n, V::set1(2.12194440e-4f), r);
  T p = V::set1(1.9875691500e-4f);
  p = V::fma(p, r, V::set1(1.3981999507e-3f));
  p = V::fma(p, r, V::set1(8.3334519073e-3f));
  p = V::fma(p, r, V::set1(4.1665795894e-2f));
  p = V::fma(p, r, V::set1(1.6666665459e-1f));
  p = V::fma(p, r, V::set1(5.0000001201e-1f));
  p = V::add(V::fma(p, V::mul(r, r), r), V::set1(1.0f));
  return V::zero_below(x, lo, V::mul(p, V::pow2(n)));
}

}  // namespace parley::cpu::simd
