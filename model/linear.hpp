// One matmul's weights for the CPU backend: matrices stacked along the output (Q, K and V; gate and up), fused
// into one matrix where neighbours share a type, each packed as F32 or kept in its file's ggml type. A
// Q4_K_M file mixes types inside a layer (attn_v in Q6_K beside Q4_K), so a stack may hold several parts.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <variant>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/quant_matrix.hpp"
#include "model/weight_matrix.hpp"

namespace parley {

class Linear {
 public:
  Linear() = default;
  // Takes the parts (each [rows][in], freed here) stacked in this order, quantized ones packed for the kernels of
  // `isa` (the backend's: quant_isa_for(be.isa())), which then read them without a per-use conversion.
  static Linear stack(int in, std::initializer_list<WeightMatrix*> parts, cpu::QuantIsa isa);

  int N() const { return N_; }
  int K() const { return K_; }
  size_t bytes() const;        // resident weight bytes
  bool packed_biased() const;  // a q8_0 part is packed as w ^ 0x80 (for vpdpbusd: the VNNI and AMX kernels)
  // out[M][N] = x[M][K] * W^T; scratch holds one part's output when there are several.
  void matmul(const cpu::CpuBackend& be, const float* x, float* out, int M, std::vector<float>& scratch) const;
  // out[i] = row rows[i] of W, decoded to floats (a tied embedding's lookup, read from the head's packing).
  void rows(const int* rows, int count, float* out) const;

 private:
  struct Part {
    std::variant<cpu::PackedMatrix, cpu::QuantMatrix> matrix;
    int rows = 0;
  };
  std::vector<Part> parts_;
  int N_ = 0, K_ = 0;
};

}  // namespace parley
