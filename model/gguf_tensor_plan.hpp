// The tensors of a model in llama.cpp's layout (names, shapes, order), planned before any is built: the GGUF
// writer (model/convert.cpp) declares them all, then builds, encodes and writes one at a time.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/llama_weights.hpp"
#include "model/weight_matrix.hpp"

namespace parley {

struct ArchSpec;

// A tensor to write: a matrix of the model as it is, or one built when it is written (permuted, fused, a
// vector), so that at most one built tensor is held at a time.
struct PlannedTensor {
  std::string name;
  std::vector<uint64_t> ne;
  const WeightMatrix* matrix = nullptr;
  std::function<WeightMatrix()> build;
};

// Every tensor of `w` in llama.cpp's layout for `arch`. drawn: the values are drawn when written (shapes are not
// checked against the matrices). Throws std::invalid_argument for what llama.cpp's files cannot hold. The plan
// refers to `c` and `w`, which must outlive it.
std::vector<PlannedTensor> plan_llama_cpp_tensors(const LlamaConfig& c, const ArchSpec& arch, const LlamaWeights& w,
                                                  bool drawn);

}  // namespace parley
