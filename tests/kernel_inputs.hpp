// Inputs the CPU kernel tests share: random vectors and the ISAs this CPU runs.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.hpp"

namespace parley::test {

// Uniform in [-scale, scale) from a xorshift stream.
inline std::vector<float> random_vec(size_t n, uint64_t seed, float scale = 1.0f) {
  std::vector<float> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    x = scale * (static_cast<float>(s >> 40) / float(1 << 24) * 2.0f - 1.0f);
  }
  return v;
}

// Generic first; each kernel test runs every one.
inline std::vector<cpu::Isa> supported_isas() {
  std::vector<cpu::Isa> out;
  for (cpu::Isa isa : {cpu::Isa::Generic, cpu::Isa::Avx2, cpu::Isa::Avx512, cpu::Isa::Amx})
    if (cpu::isa_supported(isa)) out.push_back(isa);
  return out;
}

}  // namespace parley::test
