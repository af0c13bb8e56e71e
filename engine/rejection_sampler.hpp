// Verification of draft tokens (vLLM's RejectionSampler, plus Parley's exact mode). Plain functions over
// one request's k drafts and the target's k + 1 positions (the last one for the bonus token).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace parley {

// Pads a request to k drafts when its proposer found fewer (uniform decode); verification always rejects it.
inline constexpr int kPlaceholderDraft = -1;

struct VerifyResult {
  std::vector<int> tokens;  // the accepted drafts, then one token more (a correction, or the bonus)
  int num_accepted = 0;     // drafts accepted, 0..k
};

// exact: target_tokens[i] is the token the target samples at draft position i with the request's own
// generator (k + 1 of them). Drafts are accepted while they equal it; the first mismatch emits the target's
// token; all accepted emits the bonus. The output is what the target alone would have produced.
VerifyResult verify_exact(std::span<const int> drafts, std::span<const int> target_tokens);

// rejection: target_probs[i] is the target's distribution at draft position i (k + 1 rows, after
// temperature and filters), draft_probs[i] the proposer's (k rows), or none at all for a proposer that
// only names tokens (q one-hot). Draft i is accepted with probability min(1, p(d)/q(d)); on rejection the
// token is drawn from max(p - q, 0) normalized; all accepted draws the bonus from the last row. Draws come
// from Philox keyed by (seed, position): stream 1 for acceptance, 2 for a recovered token, 0 for the bonus.
VerifyResult verify_rejection(std::span<const int> drafts, const std::vector<std::vector<float>>& target_probs,
                              const std::vector<std::vector<float>>& draft_probs, uint64_t seed,
                              int64_t first_position);

// One position of the above: the token emitted there, and whether it is the draft (then the next position
// is verified; otherwise verification stops here). q empty: the draft is one-hot.
struct RejectionVerdict {
  int token;
  bool accepted;
};
RejectionVerdict verify_rejection_at(int draft, std::span<const float> target_probs, std::span<const float> draft_probs,
                                     uint64_t seed, int64_t position);
// The bonus token after every draft stood: drawn from the last row with stream 0, as plain sampling draws.
int rejection_bonus(std::span<const float> target_probs, uint64_t seed, int64_t position);

// The token at which u (in [0, 1)) falls on the cumulative mass of weights in id order (zeros skipped), summed
// as kernels/sampling_math.hpp's inverse_cdf does: blocks of 16 ids, then the ids of one block.
int sample_inverse_cdf(std::span<const float> weights, float u);

}  // namespace parley
