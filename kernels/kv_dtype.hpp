// The KV cache's element type (--kv-cache-dtype) and its conversions: F32 to F16 or BF16 rounds to nearest even,
// and reading widens back to F32 exactly. The same functions run on the host, in the CPU kernels' scalar paths
// and in the CUDA bodies, so every backend stores the same bits.
#pragma once
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/host_device.hpp"

#ifdef __CUDA_ARCH__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace parley {

enum class KvDtype : uint8_t { F32, F16, Bf16 };

PARLEY_HD constexpr int kv_dtype_bytes(KvDtype d) { return d == KvDtype::F32 ? 4 : 2; }
inline std::string kv_dtype_name(KvDtype d) { return d == KvDtype::F32 ? "f32" : d == KvDtype::F16 ? "f16" : "bf16"; }
// "f32", "f16" or "bf16" ("auto" is the CLI's to resolve); throws std::invalid_argument naming the choices.
inline KvDtype parse_kv_dtype(const std::string& name) {
  for (KvDtype d : {KvDtype::F32, KvDtype::F16, KvDtype::Bf16})
    if (kv_dtype_name(d) == name) return d;
  throw std::invalid_argument("unknown KV cache dtype '" + name + "' (expected auto, f32, f16 or bf16)");
}

PARLEY_HD inline uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
#endif
}

PARLEY_HD inline float bits_float(uint32_t x) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(x);
#else
  float f;
  std::memcpy(&f, &x, 4);
  return f;
#endif
}

// IEEE binary16, round to nearest even (what F16C's _mm256_cvtps_ph and __float2half_rn give, NaNs quieted).
PARLEY_HD inline uint16_t f32_to_f16(float f) {
  const uint32_t x = float_bits(f), sign = (x >> 16) & 0x8000, a = x & 0x7fffffff;
  if (a > 0x7f800000) return uint16_t(sign | 0x7e00 | ((a >> 13) & 0x3ff));  // NaN
  if (a >= 0x477ff000) return uint16_t(sign | 0x7c00);                       // 65520 and up round to infinity
  if (a < 0x38800000) {                                                      // below 2^-14: a subnormal half
    const uint32_t e = a >> 23;
    if (e < 102) return uint16_t(sign);  // under 2^-25 rounds to zero
    const uint32_t m = (a & 0x7fffff) | 0x800000, shift = 126 - e;
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return uint16_t(sign | r);
  }
  uint32_t r = (a - 0x38000000) >> 13;  // rebias the exponent from 127 to 15
  const uint32_t rem = a & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) ++r;  // a carry into the exponent is still right
  return uint16_t(sign | r);
}

PARLEY_HD inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 31) return bits_float(sign | 0x7f800000 | (m << 13) | (m ? 0x400000u : 0u));  // NaNs quieted, as F16C does
  if (e == 0) {
    if (m == 0) return bits_float(sign);
    e = 113;  // a subnormal: normalize it
    while (!(m & 0x400)) m <<= 1, --e;
    return bits_float(sign | (e << 23) | ((m & 0x3ff) << 13));
  }
  return bits_float(sign | ((e + 112) << 23) | (m << 13));
}

// bfloat16: the upper half of the F32 bits, rounded to nearest even (NaNs quieted).
PARLEY_HD inline uint16_t f32_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40);
  return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

PARLEY_HD inline float bf16_to_f32(uint16_t b) { return bits_float(uint32_t(b) << 16); }

// Element access by type: T the stored type, load widens, store rounds. On a GPU, __half and __nv_bfloat16's
// own conversions (the same rounding) do the work.
template <KvDtype D>
struct KvElem;

template <>
struct KvElem<KvDtype::F32> {
  using T = float;
  PARLEY_HD static float load(const T* p, int64_t i) { return p[i]; }
  PARLEY_HD static void store(T* p, int64_t i, float v) { p[i] = v; }
};

template <>
struct KvElem<KvDtype::F16> {
  using T = uint16_t;
  PARLEY_HD static float load(const T* p, int64_t i) {
#ifdef __CUDA_ARCH__
    return __half2float(__ushort_as_half(p[i]));
#else
    return f16_to_f32(p[i]);
#endif
  }
  PARLEY_HD static void store(T* p, int64_t i, float v) {
#ifdef __CUDA_ARCH__
    p[i] = __half_as_ushort(__float2half_rn(v));
#else
    p[i] = f32_to_f16(v);
#endif
  }
};

template <>
struct KvElem<KvDtype::Bf16> {
  using T = uint16_t;
  PARLEY_HD static float load(const T* p, int64_t i) { return bf16_to_f32(p[i]); }
  PARLEY_HD static void store(T* p, int64_t i, float v) {
#ifdef __CUDA_ARCH__
    p[i] = __bfloat16_as_ushort(__float2bfloat16_rn(v));
#else
    p[i] = f32_to_bf16(v);
#endif
  }
};

// Calls f(std::integral_constant<KvDtype, D>{}) for d's D: one instantiation per dtype behind a run-time choice.
template <class F>
decltype(auto) with_kv_dtype(KvDtype d, F&& f) {
  switch (d) {
    case KvDtype::F16:
      return f(std::integral_constant<KvDtype, KvDtype::F16>{});
    case KvDtype::Bf16:
      return f(std::integral_constant<KvDtype, KvDtype::Bf16>{});
    default:
      return f(std::integral_constant<KvDtype, KvDtype::F32>{});
  }
}

}  // namespace parley
