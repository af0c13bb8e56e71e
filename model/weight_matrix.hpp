// A weight matrix [rows][cols], row-major as GGUF stores it, in the type it was loaded in: F32 values, or
// ggml's blocks as the file holds them (kernels/quant), which a backend multiplies without widening them.
// An F32 matrix reads like its std::vector<float>, since most code builds, converts or checks F32 weights;
// reading floats out of a quantized one is a logic error (decode it with to_f32()).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/quant/ggml_types.hpp"

namespace parley {

class WeightMatrix {
 public:
  WeightMatrix() = default;
  WeightMatrix(std::vector<float> values) : values_(std::move(values)) {}  // NOLINT: F32 weights are plain vectors
  // rows of quant::row_bytes(type, cols) bytes each; type F32 is taken as values.
  static WeightMatrix from_blocks(quant::GgmlType type, int64_t rows, int64_t cols, std::vector<uint8_t> blocks);

  quant::GgmlType type() const { return type_; }
  bool is_f32() const { return type_ == quant::GgmlType::F32; }
  int64_t rows() const { return rows_; }  // of a quantized matrix (F32 ones know only their size)
  int64_t cols() const { return cols_; }
  const std::vector<uint8_t>& blocks() const { return blocks_; }
  size_t bytes() const { return is_f32() ? values_.size() * sizeof(float) : blocks_.size(); }
  // The values, decoded if quantized.
  std::vector<float> to_f32() const;
  // Rows [first, first + count) of a quantized matrix with `cols` columns, or of an F32 one.
  WeightMatrix row_slice(int64_t first, int64_t count, int64_t cols) const;

  // F32 access.
  const std::vector<float>& f32() const;
  std::vector<float>& f32();
  size_t size() const { return is_f32() ? values_.size() : size_t(rows_ * cols_); }  // elements
  bool empty() const { return size() == 0; }
  const float* data() const { return f32().data(); }
  float* data() { return f32().data(); }
  auto begin() const { return f32().begin(); }
  auto end() const { return f32().end(); }
  auto begin() { return f32().begin(); }
  auto end() { return f32().end(); }
  float operator[](size_t i) const { return f32()[i]; }
  float& operator[](size_t i) { return f32()[i]; }
  bool operator==(const WeightMatrix& o) const = default;

 private:
  quant::GgmlType type_ = quant::GgmlType::F32;
  std::vector<float> values_;    // type F32
  std::vector<uint8_t> blocks_;  // any other type
  int64_t rows_ = 0, cols_ = 0;
};

}  // namespace parley
