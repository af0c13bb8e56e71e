// A mixture-of-experts FFN on the device, for DeviceLlama over any Ops (the CUDA backend, or the host emulation
// the tests run): the router's matmul, each token's routing, a GEMV per (token, slot) through the experts'
// stacked matrices (kernels/cuda/moe.hpp), the slots' weighted sum, and the shared expert behind its sigmoid gate.
// The shapes are fixed by the batch's token count, so the pass captures in a CUDA graph. It has not run on a GPU:
// only the host emulation has checked it.
#pragma once
#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <vector>

#include "kernels/moe_routing.hpp"

namespace parley::cuda {

struct MoeShape {
  moe::Routing routing;
  int dim = 0, hidden = 0, shared_hidden = 0;  // shared_hidden 0: no shared expert
};

// One layer's experts as host floats (DeviceLlama decodes them from the file's types).
struct HostExperts {
  std::vector<float> router;                  // [n_experts][dim]
  std::vector<float> gate, up;                // [n_experts * hidden][dim]
  std::vector<float> down;                    // [n_experts * dim][hidden]
  std::vector<float> shared_gate_inp;         // [dim]: one row
  std::vector<float> shared_gate, shared_up;  // [shared_hidden][dim]
  std::vector<float> shared_down;             // [dim][shared_hidden]
};

template <class Ops>
class DeviceMoe {
 public:
  using Buffer = typename Ops::Buffer;
  using Matrix = typename Ops::Matrix;
  struct Layer {
    Matrix router, gate, up, down, shared_gate_inp, shared_gate, shared_up, shared_down;
  };

  DeviceMoe(Ops& ops, const MoeShape& shape, int max_tokens) : ops_(&ops), s_(shape) {
    const size_t T = size_t(max_tokens), k = size_t(s_.routing.n_used), E = size_t(s_.routing.n_experts);
    const size_t wide = std::max(T * k * size_t(s_.hidden), T * size_t(s_.shared_hidden));
    logits_ = ops.alloc(T * E * 4), experts_ = ops.alloc(T * k * 4), weights_ = ops.alloc(T * k * 4);
    for (Buffer* b : {&gate_, &up_, &hid_}) *b = ops.alloc(wide * 4);
    y_ = ops.alloc(T * k * size_t(s_.dim) * 4), shared_logit_ = ops.alloc(T * 4);
  }

  Layer upload(const HostExperts& h) const {
    const int E = s_.routing.n_experts, dim = s_.dim, H = s_.hidden, S = s_.shared_hidden;
    auto matrix = [&](const std::vector<float>& w, int N, int K) {
      if (w.size() != size_t(N) * size_t(K)) throw std::invalid_argument("expert weights have the wrong size");
      return ops_->upload_matrix(w.data(), N, K);
    };
    Layer L{matrix(h.router, E, dim), matrix(h.gate, E * H, dim), matrix(h.up, E * H, dim), matrix(h.down, E * dim, H)};
    if (S > 0) {
      L.shared_gate_inp = matrix(h.shared_gate_inp, 1, dim);
      L.shared_gate = matrix(h.shared_gate, S, dim), L.shared_up = matrix(h.shared_up, S, dim);
      L.shared_down = matrix(h.shared_down, dim, S);
    }
    return L;
  }

  // out[M][dim] = the FFN of xb[M][dim] (normed already).
  void run(const Layer& L, const float* xb, float* out, int M) const {
    const int k = s_.routing.n_used, dim = s_.dim, H = s_.hidden, S = s_.shared_hidden;
    float *logits = logits_.template get<float>(), *weights = weights_.template get<float>();
    float *gate = gate_.template get<float>(), *up = up_.template get<float>(), *hid = hid_.template get<float>();
    float* y = y_.template get<float>();
    int* experts = experts_.template get<int>();
    ops_->matmul(xb, L.router, logits, M);
    ops_->route(logits, M, s_.routing, experts, weights);
    ops_->expert_matmul(xb, false, L.gate, H, experts, M, k, gate);
    ops_->expert_matmul(xb, false, L.up, H, experts, M, k, up);
    ops_->swiglu(gate, up, hid, int64_t(M) * k * H);
    ops_->expert_matmul(hid, true, L.down, dim, experts, M, k, y);
    ops_->moe_sum(y, weights, M, k, dim, out);
    if (S == 0) return;
    ops_->matmul(xb, L.shared_gate, gate, M);
    ops_->matmul(xb, L.shared_up, up, M);
    ops_->swiglu(gate, up, hid, int64_t(M) * S);
    ops_->matmul(hid, L.shared_down, y, M);
    ops_->matmul(xb, L.shared_gate_inp, shared_logit_.template get<float>(), M);
    ops_->gated_add(out, y, shared_logit_.template get<float>(), M, dim);
  }

 private:
  Ops* ops_;
  MoeShape s_;
  Buffer logits_, experts_, weights_, gate_, up_, hid_, y_, shared_logit_;
};

}  // namespace parley::cuda
