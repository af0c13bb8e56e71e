// CUDA mixture-of-experts bodies, one thread per index: each token's routing (kernels/moe_routing.hpp, the CPU
// model's definition), a GEMV per (token, slot) through that slot's expert (llama.cpp's mul_mat_id, unfused:
// every output one dot in k order, so a row's bits never depend on the batch), the weighted sum over a token's
// slots in slot order, and the shared expert's sigmoid-gated add.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/host_device.hpp"
#include "kernels/moe_routing.hpp"

namespace parley::cuda::body {

// Token t's router logits [n_experts] (probabilities after) to its experts and weights [n_used].
PARLEY_HD inline void route_at(float* logits, const moe::Routing& r, int* experts, float* weights, int64_t t) {
  moe::route(logits + t * r.n_experts, r, experts + t * r.n_used, weights + t * r.n_used);
}

// out[t * k + s][n] = x[row] . w[experts[t * k + s] * N + n], row = t * k + s (per_slot) or t; w(i) reads the
// stacked [n_experts * N][K] weights as floats.
template <class Load>
PARLEY_HD inline void expert_dot_at(const float* x, bool per_slot, Load w, int N, int K, const int* experts, int k,
                                    float* out, int64_t i) {
  const int64_t slot = i / N, n = i % N;
  const float* xr = x + (per_slot ? slot : slot / k) * K;
  const int64_t base = (int64_t(experts[slot]) * N + n) * K;
  float acc = 0.0f;
  for (int j = 0; j < K; ++j) acc += xr[j] * w(base + j);
  out[i] = acc;
}

// out[t][j] = sum over s of weights[t * k + s] * y[t * k + s][j], in slot order (best expert first).
PARLEY_HD inline void moe_sum_at(const float* y, const float* weights, int k, int dim, float* out, int64_t i) {
  const int64_t t = i / dim, j = i % dim;
  float o = y[(t * k) * dim + j] * weights[t * k];
  for (int s = 1; s < k; ++s) o += y[(t * k + s) * dim + j] * weights[t * k + s];
  out[i] = o;
}

// out[t][j] += y[t][j] * sigmoid(gate[t]): the shared expert behind its gate.
PARLEY_HD inline void gated_add_at(float* out, const float* y, const float* gate, int dim, int64_t i) {
  out[i] += y[i] * (1.0f / (1.0f + expf(-gate[i / dim])));
}

}  // namespace parley::cuda::body
