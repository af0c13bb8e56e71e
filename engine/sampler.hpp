// Turns rows of logits into tokens, in vLLM v1's order: logprobs of the raw logits; min_tokens, logit_bias,
// penalties and a structured output's grammar mask; then greedy argmax, or temperature, min_p, top_k, top_p and a draw
// keyed by (seed, position) so no other row can change it.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "engine/outputs.hpp"
#include "engine/sampling_metadata.hpp"
#include "engine/sampling_params.hpp"
#include "engine/top_k_top_p.hpp"

namespace parley {

int argmax(const float* logits, int vocab);  // lowest id on ties, as llama2.c (the best ISA's kernel)

// The log-softmax of raw logits at `token`, its rank, and the top num_top (token, logprob) pairs.
TokenLogprobs compute_token_logprobs(const float* logits, int vocab, int token, int num_top);

// One entry per sampled logits row.
struct SamplerOutput {
  std::vector<int> sampled_token_ids;
  std::vector<std::optional<TokenLogprobs>> logprobs;  // set for rows whose request asked for logprobs
};

class Sampler {
 public:
  // isa: the row kernels' instruction set (each draws the same tokens; Auto picks the CPU's best).
  explicit Sampler(cpu::Isa isa = cpu::Isa::Auto) : kernels_(cpu::sampling_kernels(isa)) {}

  // One row with no penalties, logit_bias or min_tokens. position: the index of the token being sampled.
  int sample(const float* logits, int vocab, const SamplingParams& params, uint64_t seed, int64_t position);

  // Samples logits row i (rows are vocab wide) for batch row batch_rows[i], the token at positions[i].
  // The logits are left untouched: processing works on a copy of a row, and only when it applies.
  SamplerOutput sample(const float* logits, int vocab, std::span<const int> batch_rows,
                       std::span<const int64_t> positions, const SamplingMetadata& metadata);

  // Whether a device's sampling kernel can draw row `row` this step: it uses no field kSamplingFields leaves to the
  // host (OnDevice::HostWhenUsed), and min_tokens no longer masks its stop tokens.
  static bool plain_row(int row, const SamplingMetadata& metadata);
  // Row `row`'s logits after min_tokens, logit_bias, penalties and the grammar mask: what greedy argmax and
  // temperature see.
  // Returns logits itself when none applies, else this sampler's scratch (valid until the next call).
  const float* process_logits(const float* logits, int vocab, int row, const SamplingMetadata& metadata);
  // The delayed split: one row's final prefill logits, processed once, give each seed's first token, so
  // child i gets exactly what an n = 1 request with seeds[i] would sample there.
  std::vector<int> sample_children(const float* logits, int vocab, int row, int64_t position,
                                   const SamplingMetadata& metadata, std::span<const uint64_t> seeds);
  // The distribution row `row` samples from (processed logits, temperature, min_p, top_k, top_p), normalized:
  // the target's p for rejection sampling. Throws std::invalid_argument for a greedy row.
  std::vector<float> target_probs(const float* logits, int vocab, int row, const SamplingMetadata& metadata);

 private:
  struct Filters {
    float temperature, top_p, min_p;
    int top_k;
  };
  int sample_filtered(const float* logits, int vocab, const Filters& f, uint64_t seed, int64_t position);
  void filter_probs(const float* logits, int vocab, const Filters& f);  // probs_: e^(logits / T - max), filtered
  void apply_penalties(float* logits, std::span<const int> prompt, std::span<const int> output, float presence,
                       float frequency, float repetition);

  cpu::SamplingKernels kernels_;
  TopKTopP cuts_{kernels_};
  std::vector<float> probs_, processed_;
  std::vector<int> counts_, touched_;  // per-token counts, all zero between calls
};

}  // namespace parley
