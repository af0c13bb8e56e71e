#include "model/weight_matrix.hpp"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/quant/quantize.hpp"

namespace parley {

WeightMatrix WeightMatrix::from_blocks(quant::GgmlType type, int64_t rows, int64_t cols, std::vector<uint8_t> blocks) {
  if (rows < 0 || cols < 0 || blocks.size() != quant::row_bytes(type, cols) * size_t(rows))
    throw std::invalid_argument("WeightMatrix: " + std::to_string(blocks.size()) + " bytes for " +
                                std::to_string(rows) + " rows of " + std::to_string(cols) + " " +
                                quant::traits(type).name + " values");
  WeightMatrix m;
  if (type == quant::GgmlType::F32) {
    m.values_.resize(size_t(rows * cols));
    std::memcpy(m.values_.data(), blocks.data(), blocks.size());
    return m;
  }
  m.type_ = type, m.rows_ = rows, m.cols_ = cols, m.blocks_ = std::move(blocks);
  return m;
}

std::vector<float> WeightMatrix::to_f32() const {
  if (is_f32()) return values_;
  std::vector<float> out(size_t(rows_ * cols_));
  const size_t row = quant::row_bytes(type_, cols_);
  for (int64_t r = 0; r < rows_; ++r)
    quant::dequantize_row(type_, blocks_.data() + size_t(r) * row, out.data() + r * cols_, cols_);
  return out;
}

WeightMatrix WeightMatrix::row_slice(int64_t first, int64_t count, int64_t cols) const {
  const int64_t rows = is_f32() ? int64_t(values_.size()) / cols : rows_;
  if (first < 0 || count < 0 || first + count > rows || (!is_f32() && cols != cols_))
    throw std::invalid_argument("WeightMatrix::row_slice: rows " + std::to_string(first) + " + " +
                                std::to_string(count) + " of " + std::to_string(rows));
  if (is_f32()) return std::vector<float>(values_.begin() + first * cols, values_.begin() + (first + count) * cols);
  const size_t row = quant::row_bytes(type_, cols_);
  return from_blocks(
      type_, count, cols_,
      {blocks_.begin() + std::ptrdiff_t(first * row), blocks_.begin() + std::ptrdiff_t((first + count) * row)});
}

const std::vector<float>& WeightMatrix::f32() const {
  if (!is_f32())
    throw std::logic_error(std::string("WeightMatrix: F32 values asked of a ") + quant::traits(type_).name + " matrix");
  return values_;
}
std::vector<float>& WeightMatrix::f32() { return const_cast<std::vector<float>&>(std::as_const(*this).f32()); }

}  // namespace parley
