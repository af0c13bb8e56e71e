// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): a counter-based
// generator, so the random number for (seed, position) is computed directly, with no state.
#pragma once
#include <cstdint>

#include "kernels/host_device.hpp"  // the CUDA sampler draws the same numbers

namespace parley {

PARLEY_HD inline void philox4x32_10(uint32_t ctr[4], uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * ctr[0];
    const uint64_t p1 = uint64_t(0xCD9E8D57u) * ctr[2];
    const uint32_t next[4] = {uint32_t(p1 >> 32) ^ ctr[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ ctr[3] ^ k1,
                              uint32_t(p0)};
    for (int i = 0; i < 4; ++i) ctr[i] = next[i];
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

// Uniform in [0, 1) with 24 random bits, for stream `stream` of (seed, position).
PARLEY_HD inline float philox_uniform(uint64_t seed, uint64_t position, uint32_t stream = 0) {
  uint32_t ctr[4] = {uint32_t(position), uint32_t(position >> 32), stream, 0};
  philox4x32_10(ctr, uint32_t(seed), uint32_t(seed >> 32));
  return float(ctr[0] >> 8) * (1.0f / 16777216.0f);
}

}  // namespace parley
