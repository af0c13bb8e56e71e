#include "model/classifier_head.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace parley {

std::optional<ClassifierHead> ClassifierHead::from(const LlamaConfig& config, const LlamaWeights& weights) {
  if (weights.cls_out.empty()) return std::nullopt;
  ClassifierHead h;
  h.dim = config.dim;
  h.weight = weights.cls_out.is_f32() ? weights.cls_out.f32() : weights.cls_out.to_f32();
  h.n_out = int(h.weight.size() / size_t(h.dim));
  if (h.n_out < 1 || size_t(h.n_out) * size_t(h.dim) != h.weight.size())
    throw std::invalid_argument("cls.output.weight is not [n_cls_out][dim]");
  h.bias = weights.cls_out_bias;
  if (!h.bias.empty() && h.bias.size() != size_t(h.n_out))
    throw std::invalid_argument("cls.output.bias does not match cls.output.weight");
  h.reads_last = h.softmax = config.arch == "qwen3";  // llama.cpp: qwen3 (and qwen3vl) rerankers
  return h;
}

std::vector<float> ClassifierHead::apply(std::span<const float> hidden) const {
  if (hidden.size() != size_t(dim)) throw std::logic_error("ClassifierHead: a hidden state of the wrong width");
  std::vector<float> out(static_cast<size_t>(n_out), 0.0f);
  for (int o = 0; o < n_out; ++o) {
    double sum = bias.empty() ? 0.0 : bias[size_t(o)];
    for (int d = 0; d < dim; ++d) sum += double(weight[size_t(o) * dim + d]) * hidden[size_t(d)];
    out[size_t(o)] = float(sum);
  }
  if (!softmax) return out;
  const float top = *std::max_element(out.begin(), out.end());
  double total = 0.0;
  for (float& x : out) total += (x = std::exp(x - top));
  for (float& x : out) x = float(x / total);
  return out;
}

}  // namespace parley
