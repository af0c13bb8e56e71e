// A reranker's head (llama.cpp's build_pooling, LLAMA_POOLING_TYPE_RANK): a cross-encoder's dense layer and tanh
// (cls.weight) when the file has one, then cls.output over one token's final hidden state, one logit per label;
// qwen3 reads the last token and softmaxes the logits (Qwen3-Reranker), a one-label head's logit goes through a
// sigmoid (vLLM's and node-llama-cpp's score for BERT cross-encoders).
#pragma once
#include <optional>
#include <span>
#include <vector>

#include "model/llama_config.hpp"
#include "model/llama_weights.hpp"

namespace parley {

struct ClassifierHead {
  enum class Normalize { None, Softmax, Sigmoid };
  int dim = 0, n_out = 0;
  std::vector<float> dense;               // [dim][dim] widened to F32 (cls.weight), or empty
  std::vector<float> dense_bias;          // [dim] (cls.bias), or empty
  std::vector<float> weight;              // [n_out][dim], widened to F32
  std::vector<float> bias;                // [n_out], or empty
  bool reads_last = false;                // the sequence's last token (qwen3), else its first
  Normalize normalize = Normalize::None;  // output[0] is a probability unless None

  // The file's head, when it has one (cls.output.weight).
  static std::optional<ClassifierHead> from(const LlamaConfig& config, const LlamaWeights& weights);
  // One token's hidden state [dim] to n_out outputs (logits, or probabilities when normalized).
  std::vector<float> apply(std::span<const float> hidden) const;
};

}  // namespace parley
