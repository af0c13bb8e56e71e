// CUDA exact verification for speculative decoding: one thread per verifying row. The row's 1 + k sampled
// tokens (what the target draws at each position with the request's generator) against its k drafts: drafts
// stand while they equal the sampled token; the accepted drafts plus the next sampled token are emitted.
#pragma once

#include "kernels/host_device.hpp"

namespace parley::cuda::body {

// sampled: [1 + k]; drafts: [k] (a placeholder draft is any id the sampler never draws, e.g. -1).
// Returns how many drafts stand; the row emits sampled[0 .. accepted].
PARLEY_HD inline int verify_exact_row(const int* sampled, const int* drafts, int k) {
  int accepted = 0;
  while (accepted < k && drafts[accepted] == sampled[accepted]) ++accepted;
  return accepted;
}

}  // namespace parley::cuda::body
