#include "model/classifier_head.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace parley {
namespace {

// out[o] = bias[o] + sum_d w[o][d] * x[d], summed in double.
std::vector<float> affine(const std::vector<float>& w, const std::vector<float>& bias, std::span<const float> x,
                          int n_out) {
  const size_t dim = x.size();
  std::vector<float> out(size_t(n_out), 0.0f);
  for (size_t o = 0; o < size_t(n_out); ++o) {
    double sum = bias.empty() ? 0.0 : bias[o];
    for (size_t d = 0; d < dim; ++d) sum += double(w[o * dim + d]) * x[d];
    out[o] = float(sum);
  }
  return out;
}

std::vector<float> widened(const WeightMatrix& m) { return m.is_f32() ? m.f32() : m.to_f32(); }

}  // namespace

std::optional<ClassifierHead> ClassifierHead::from(const LlamaConfig& config, const LlamaWeights& weights) {
  if (weights.cls_out.empty()) return std::nullopt;
  ClassifierHead h;
  h.dim = config.dim;
  h.weight = widened(weights.cls_out);
  h.n_out = int(h.weight.size() / size_t(h.dim));
  if (h.n_out < 1 || size_t(h.n_out) * size_t(h.dim) != h.weight.size())
    throw std::invalid_argument("cls.output.weight is not [n_cls_out][dim]");
  h.bias = weights.cls_out_bias;
  if (!h.bias.empty() && h.bias.size() != size_t(h.n_out))
    throw std::invalid_argument("cls.output.bias does not match cls.output.weight");
  if (!weights.cls.empty()) {
    h.dense = widened(weights.cls);
    h.dense_bias = weights.cls_bias;
    if (h.dense.size() != size_t(h.dim) * size_t(h.dim) ||
        (!h.dense_bias.empty() && h.dense_bias.size() != size_t(h.dim)))
      throw std::invalid_argument("cls.weight is not [dim][dim] (or cls.bias not [dim])");
  }
  const bool qwen3 = config.arch == "qwen3";  // llama.cpp: qwen3 (and qwen3vl) rerankers
  h.reads_last = qwen3;
  h.normalize = qwen3 ? Normalize::Softmax : h.n_out == 1 ? Normalize::Sigmoid : Normalize::None;
  return h;
}

std::vector<float> ClassifierHead::apply(std::span<const float> hidden) const {
  if (hidden.size() != size_t(dim)) throw std::logic_error("ClassifierHead: a hidden state of the wrong width");
  std::vector<float> pooled(hidden.begin(), hidden.end());
  if (!dense.empty()) {
    pooled = affine(dense, dense_bias, hidden, dim);
    for (float& x : pooled) x = std::tanh(x);
  }
  std::vector<float> out = affine(weight, bias, pooled, n_out);
  if (normalize == Normalize::Sigmoid) {
    for (float& x : out) x = float(1.0 / (1.0 + std::exp(-double(x))));
  } else if (normalize == Normalize::Softmax) {
    const float top = *std::max_element(out.begin(), out.end());
    double total = 0.0;
    for (float& x : out) total += (x = std::exp(x - top));
    for (float& x : out) x = float(x / total);
  }
  return out;
}

}  // namespace parley
