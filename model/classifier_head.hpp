// A reranker's head (llama.cpp's build_pooling, LLAMA_POOLING_TYPE_RANK): cls.output over one token's final-normed
// hidden state, one logit per label; qwen3 reads the last token and softmaxes the logits (Qwen3-Reranker).
#pragma once
#include <optional>
#include <span>
#include <vector>

#include "model/llama_config.hpp"
#include "model/llama_weights.hpp"

namespace parley {

struct ClassifierHead {
  int dim = 0, n_out = 0;
  std::vector<float> weight;  // [n_out][dim], widened to F32
  std::vector<float> bias;    // [n_out], or empty
  bool reads_last = false;    // the sequence's last token (qwen3), else its first
  bool softmax = false;       // the logits normalized (qwen3): output[0] is then a probability

  // The file's head, when it has one (cls.output.weight).
  static std::optional<ClassifierHead> from(const LlamaConfig& config, const LlamaWeights& weights);
  // One token's hidden state [dim] to n_out outputs (logits, or probabilities with softmax).
  std::vector<float> apply(std::span<const float> hidden) const;
};

}  // namespace parley
