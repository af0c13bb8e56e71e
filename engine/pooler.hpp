// The pooler after the last hidden state (vLLM's Pooler, llama.cpp's build_pooling): which prompt positions a
// pooling type reads, and one request's pool over them, fed chunk by chunk as its prefill runs. The hidden states
// are the final-normed ones (llama.cpp's t_embd, after output_norm). Sums run in position order whatever the
// chunks, so a vector is the same alone, in any batch and chunked or not.
#pragma once
#include <optional>
#include <span>
#include <vector>

#include "engine/flag_choices.hpp"
#include "engine/pooling_params.hpp"
#include "model/classifier_head.hpp"
#include "model/llama_config.hpp"

namespace parley {

// The positions of [start, end) of a prompt of num_prompt tokens that `type` reads, as [first, last); empty when none.
struct PooledRange {
  int first = 0, last = 0;
  int size() const { return last - first; }
};
PooledRange pooled_range(PoolingType type, int start, int end, int num_prompt);
// The positions a served pooling reads, as a plain type: rank reads the head's token (qwen3: the last, else the first).
PoolingType pooled_positions(PoolingType served, const ClassifierHead* head);

class PooledSequence {
 public:
  // type: the positions it reads (pooled_positions); head: a reranker's, applied in finish() to score requests.
  PooledSequence(PoolingType type, int dim, int num_prompt, PoolingParams params, const ClassifierHead* head = nullptr);
  // Hidden states of consecutive positions from `first` on ([n][dim]); positions arrive in order.
  void add(int first, std::span<const float> hidden);
  // Every position it reads has arrived.
  bool complete() const { return next_ == pooled_range(type_, 0, num_prompt_, num_prompt_).last; }
  // The pooled vector, cut to params.dimensions and normalized as params say; a score request's: {head's output[0]}.
  std::vector<float> finish() const;

 private:
  PoolingType type_;
  int dim_, num_prompt_;
  PoolingParams params_;
  const ClassifierHead* head_;
  int next_;                 // the next position it expects
  std::vector<double> sum_;  // mean: the sum so far; cls, last: the one row
};

// The pooling the engine serves (None: it generates) from --task, --pooling and the file's {arch}.pooling_type: auto
// embeds when a pooling type is given or named by the file, reranks when that type is rank. Throws
// std::invalid_argument for embed without a pooling type or with rank, and rerank with another.
PoolingType served_pooling(EngineTask task, std::optional<PoolingType> flag, PoolingType file);

// Cuts to `dimensions` (> 0) and L2-normalizes when asked: the caller's half of pooling.
void finish_embedding(std::vector<float>& v, const PoolingParams& params);

}  // namespace parley
