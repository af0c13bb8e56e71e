// The sampler's vector kernels over a vector policy V (vec_avx2.hpp, vec_avx512.hpp), for translation units
// compiled with -ffp-contract=off: each returns the bits of its scalar definition in kernels/sampling_math.hpp.
#pragma once
#include <algorithm>
#include <cmath>

#include "kernels/cpu/sampling_kernels.hpp"
#include "kernels/cpu/simd_exp.hpp"
#include "kernels/sampling_math.hpp"

namespace parley::cpu::simd {

// A part-vector at p + i .. p + n - 1, the missing lanes filled.
template <class V>
typename V::T load_part(const float* p, int i, int n, float fill) {
  float tail[V::W];
  std::fill_n(tail, V::W, fill);
  std::copy(p + i, p + n, tail);
  return V::load(tail);
}

template <class V>
float max_value(const float* x, int n) {
  typename V::T m = V::set1(-INFINITY);
  const int full = n - n % V::W;
  for (int i = 0; i < full; i += V::W) m = V::max(V::load(x + i), m);  // max(x, m): m where x is NaN
  if (full < n) m = V::max(load_part<V>(x, full, n, -INFINITY), m);
  float lanes[V::W];
  V::store(lanes, m);
  return sampling::max_value(lanes, V::W);
}

template <class V>
int argmax(const float* x, int n) {
  if (std::isnan(x[0])) return 0;  // the scan keeps x[0] when nothing compares greater than it
  const typename V::T m = V::set1(max_value<V>(x, n));
  const int full = n - n % V::W;
  for (int i = 0; i < full; i += V::W)
    if (const unsigned hit = V::eq_mask(V::load(x + i), m)) return i + __builtin_ctz(hit);
  if (full < n)
    if (const unsigned hit = V::eq_mask(load_part<V>(x, full, n, NAN), m)) return full + __builtin_ctz(hit);
  return 0;
}

template <class V>
void exp_scaled(const float* x, int n, float scale, float shift, float* out) {
  const typename V::T s = V::set1(scale), sh = V::set1(shift);
  auto at = [&](typename V::T v) { return exp_nonpositive<V>(V::sub(V::mul(v, s), sh)); };
  const int full = n - n % V::W;
  for (int i = 0; i < full; i += V::W) V::store(out + i, at(V::load(x + i)));
  if (full == n) return;
  float tail[V::W];
  V::store(tail, at(load_part<V>(x, full, n, -INFINITY)));
  std::copy_n(tail, n - full, out + full);
}

template <class V>
void zero_below(float* x, int n, float cut) {
  const typename V::T c = V::set1(cut);
  const int full = n - n % V::W;
  for (int i = 0; i < full; i += V::W) {
    const typename V::T v = V::load(x + i);
    V::store(x + i, V::zero_below(v, c, v));  // v where v >= cut, else (NaN too) 0
  }
  sampling::zero_below(x + full, n - full, cut);
}

// The mass of ids [b, b + 16), b + 16 <= n: tree16 of the weights clamped at zero (max(x, 0): 0 for NaN).
template <class V>
float block_mass(const float* w, int b) {
  using T = typename V::T;
  constexpr int NV = sampling::kBlock / V::W;
  T s = V::max(V::load(w + b), V::zero());
  if constexpr (NV == 2) s = V::add(s, V::max(V::load(w + b + V::W), V::zero()));
  return V::hsum(s);
}

template <class V, class Sum = float>
Sum cdf_total(const float* w, int n) {
  const int full = n - n % sampling::kBlock;
  Sum total = 0;
  for (int b = 0; b < full; b += sampling::kBlock) total += block_mass<V>(w, b);
  if (full < n) total += sampling::block_mass([&](int i) { return w[i]; }, full, n);
  return total;
}

// sampling::inverse_cdf over an array, the whole blocks' masses by vectors.
template <class V>
int inverse_cdf(const float* w, int n, float target) {
  const int full = n - n % sampling::kBlock;
  float cum = 0.0f;
  int b = 0;
  for (; b < full; b += sampling::kBlock) {
    const float next = cum + block_mass<V>(w, b);
    if (target < next) break;
    cum = next;
  }
  if (b == n) return -1;
  const auto weight = [&](int i) { return w[i]; };
  if (b == full && !(target < cum + sampling::block_mass(weight, b, n))) return -1;
  return sampling::walk_block(weight, b, n, cum, target);
}

template <class V>
SamplingKernels make_sampling_kernels(Isa isa) {
  return {isa,           &max_value<V>,         &argmax<V>,     &exp_scaled<V>, &zero_below<V>,
          &cdf_total<V>, &cdf_total<V, double>, &inverse_cdf<V>};
}

}  // namespace parley::cpu::simd
