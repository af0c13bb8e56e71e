#include "model/linear.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace parley {

Linear Linear::stack(int in, std::initializer_list<WeightMatrix*> parts) {
  Linear l;
  l.K_ = in;
  std::vector<WeightMatrix*> run;  // neighbours of one type, fused into one part
  auto flush = [&] {
    if (run.empty()) return;
    const quant::GgmlType type = run.front()->type();
    int rows = 0;
    if (type == quant::GgmlType::F32) {
      std::vector<float> stacked;
      for (WeightMatrix* m : run) stacked.insert(stacked.end(), m->begin(), m->end()), *m = {};
      rows = int(stacked.size() / size_t(in));
      l.parts_.push_back({cpu::pack_matrix(stacked.data(), rows, in), rows});
    } else {
      std::vector<uint8_t> stacked;
      for (WeightMatrix* m : run) {
        if (m->cols() != in) throw std::invalid_argument("Linear: a " + std::to_string(m->cols()) + "-column part in a stack of " + std::to_string(in));
        stacked.insert(stacked.end(), m->blocks().begin(), m->blocks().end());
        rows += int(m->rows());
        *m = {};
      }
      l.parts_.push_back({cpu::pack_quant_matrix(type, stacked.data(), rows, in), rows});
    }
    l.N_ += rows;
    run.clear();
  };
  for (WeightMatrix* m : parts) {
    if (!run.empty() && run.front()->type() != m->type()) flush();
    run.push_back(m);
  }
  flush();
  return l;
}

size_t Linear::bytes() const {
  size_t total = 0;
  for (const Part& p : parts_)
    total += std::visit([](const auto& m) { return m.data.size() * sizeof(m.data[0]); }, p.matrix);
  return total;
}

void Linear::matmul(const cpu::CpuBackend& be, const float* x, float* out, int M, std::vector<float>& scratch) const {
  if (parts_.size() == 1) return std::visit([&](const auto& m) { be.matmul(x, m, out, M); }, parts_.front().matrix);
  int at = 0;  // each part into scratch, then into its columns of out
  for (const Part& p : parts_) {
    scratch.resize(size_t(M) * p.rows);
    std::visit([&](const auto& m) { be.matmul(x, m, scratch.data(), M); }, p.matrix);
    for (int r = 0; r < M; ++r) std::copy_n(scratch.data() + size_t(r) * p.rows, p.rows, out + size_t(r) * N_ + at);
    at += p.rows;
  }
}

}  // namespace parley
