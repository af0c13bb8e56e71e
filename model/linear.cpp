#include "model/linear.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/quant/quantize.hpp"

namespace parley {

Linear Linear::stack(int in, std::initializer_list<WeightMatrix*> parts, cpu::QuantIsa isa) {
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
      std::vector<uint8_t> stacked;  // only when fusing: a lone matrix packs from its own blocks
      for (WeightMatrix* m : run) {
        if (m->cols() != in)
          throw std::invalid_argument("Linear: a " + std::to_string(m->cols()) + "-column part in a stack of " +
                                      std::to_string(in));
        rows += int(m->rows());
      }
      if (run.size() > 1) {
        stacked.reserve(quant::row_bytes(type, in) * size_t(rows));
        for (WeightMatrix* m : run) stacked.insert(stacked.end(), m->blocks().begin(), m->blocks().end());
      }
      l.parts_.push_back(
          {cpu::pack_quant_matrix(type, run.size() > 1 ? stacked.data() : run.front()->blocks().data(), rows, in, isa),
           rows});
      for (WeightMatrix* m : run) *m = {};
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

bool Linear::packed_biased() const {
  return std::any_of(parts_.begin(), parts_.end(), [](const Part& p) {
    const auto* q = std::get_if<cpu::QuantMatrix>(&p.matrix);
    return q && q->biased;
  });
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

void Linear::rows(const int* rows, int count, float* out) const {
  std::vector<uint8_t> blocks;
  for (int i = 0; i < count; ++i) {
    int n = rows[i];
    auto part = parts_.begin();
    for (; part != parts_.end() && n >= part->rows; ++part) n -= part->rows;
    if (part == parts_.end())
      throw std::out_of_range("Linear::rows: row " + std::to_string(rows[i]) + " of " + std::to_string(N_));
    float* dst = out + size_t(i) * K_;
    if (const auto* f = std::get_if<cpu::PackedMatrix>(&part->matrix)) {  // panels of kPanel columns, [k][column]
      constexpr int P = cpu::PackedMatrix::kPanel;
      const float* panel = f->data.data() + size_t(n / P) * K_ * P + n % P;
      for (int k = 0; k < K_; ++k) dst[k] = panel[size_t(k) * P];
    } else {
      const auto& q = std::get<cpu::QuantMatrix>(part->matrix);
      blocks.resize(quant::row_bytes(q.type, K_));
      cpu::quant_matrix_row(q, n, blocks.data());
      quant::dequantize_row(q.type, blocks.data(), dst, K_);
    }
  }
}

}  // namespace parley
