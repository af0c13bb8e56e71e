#include "engine/pooler.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace parley {

PooledRange pooled_range(PoolingType type, int start, int end, int num_prompt) {
  PooledRange all{0, 0};
  switch (type) {
    case PoolingType::Mean:
      all = {0, num_prompt};
      break;
    case PoolingType::Cls:
      all = {0, 1};
      break;
    case PoolingType::Last:
      all = {num_prompt - 1, num_prompt};
      break;
    case PoolingType::None:
    case PoolingType::Rank:  // resolved to its token by pooled_positions
      throw std::invalid_argument("no pooling of this type is served");
  }
  const PooledRange r{std::max(start, all.first), std::min(end, all.last)};
  return r.first < r.last ? r : PooledRange{};
}

PoolingType pooled_positions(PoolingType served, const ClassifierHead* head) {
  if (served != PoolingType::Rank) return served;
  if (!head) throw std::invalid_argument("the model pools by rank but has no classifier head (cls.output.weight)");
  return head->reads_last ? PoolingType::Last : PoolingType::Cls;
}

PooledSequence::PooledSequence(PoolingType type, int dim, int num_prompt, PoolingParams params,
                               const ClassifierHead* head)
    : type_(type), dim_(dim), num_prompt_(num_prompt), params_(params), head_(head), sum_(size_t(dim), 0.0) {
  if (params_.task == PoolingTask::Score && !head_) throw std::logic_error("pooling: a score request without a head");
  next_ = pooled_range(type_, 0, num_prompt_, num_prompt_).first;
}

void PooledSequence::add(int first, std::span<const float> hidden) {
  const int n = int(hidden.size()) / dim_;
  if (first != next_ || size_t(n) * dim_ != hidden.size())
    throw std::logic_error("pooling: positions from " + std::to_string(first) + " arrived, expected " +
                           std::to_string(next_));
  for (int i = 0; i < n; ++i)
    for (int d = 0; d < dim_; ++d) sum_[size_t(d)] += hidden[size_t(i) * dim_ + d];
  next_ += n;
}

std::vector<float> PooledSequence::finish() const {
  if (!complete()) throw std::logic_error("pooling: the sequence is not complete");
  const double count = type_ == PoolingType::Mean ? double(num_prompt_) : 1.0;
  std::vector<float> v(static_cast<size_t>(dim_));
  for (int d = 0; d < dim_; ++d) v[size_t(d)] = float(sum_[size_t(d)] / count);
  if (params_.task == PoolingTask::Score) return {head_->apply(v).front()};
  finish_embedding(v, params_);
  return v;
}

PoolingType served_pooling(EngineTask task, std::optional<PoolingType> flag, PoolingType file) {
  const PoolingType pooling = flag.value_or(file);
  if (task == EngineTask::Generate || (task == EngineTask::Auto && pooling == PoolingType::None))
    return PoolingType::None;
  if (task == EngineTask::Rerank && pooling != PoolingType::Rank)
    throw std::invalid_argument("--task rerank needs a reranker: the model file's pooling type is not rank");
  if (pooling == PoolingType::None)
    throw std::invalid_argument(
        "--task embed needs a pooling type: the model file names none (--pooling mean|cls|last)");
  if (task == EngineTask::Embed && pooling == PoolingType::Rank)
    throw std::invalid_argument(
        "the model pools by rank (a reranker): --task rerank, or --pooling mean|cls|last to embed");
  return pooling;
}

void finish_embedding(std::vector<float>& v, const PoolingParams& params) {
  if (params.dimensions > 0 && size_t(params.dimensions) < v.size()) v.resize(size_t(params.dimensions));
  if (!params.normalize) return;
  double sum = 0.0;
  for (float x : v) sum += double(x) * x;
  const double norm = std::sqrt(sum);
  if (norm > 0.0)
    for (float& x : v) x = float(x / norm);
}

}  // namespace parley
