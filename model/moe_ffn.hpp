// A mixture-of-experts FFN on the CPU (llama.cpp's build_moe_ffn, vLLM's FusedMoE): the router picks each
// token's experts, the rows routed to one expert are gathered and multiplied together (each expert's weights
// read once a step), and each token sums its experts' outputs, weighted, in its own fixed order. A token's output
// is the same bits alone or in any batch: rows are multiplied independently and nothing sums across tokens.
#pragma once
#include <cstddef>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/moe_routing.hpp"
#include "model/linear.hpp"
#include "model/llama_config.hpp"
#include "model/llama_weights.hpp"

namespace parley {

// One token's chosen experts, best first (ties to the lower index), and their weights.
struct ExpertChoice {
  std::vector<int> experts;    // [n_used]
  std::vector<float> weights;  // [n_used]
};

// The routing of one token from its router logits [n_experts] (with the router bias added): llama.cpp's gating,
// top-k, then normalization and scaling as the config says.
ExpertChoice route_token(const float* logits, const MoeConfig& moe);

class MoeFfn {
 public:
  MoeFfn() = default;
  // Takes the weights (freed here) and packs each expert's gate and up as one matrix, as the dense FFN does.
  MoeFfn(const LlamaConfig& c, ExpertWeights& w, cpu::QuantIsa isa);  // isa: the one the matrices are packed for

  // out[M][dim] = the FFN of x[M][dim] (normed already); out must not alias x.
  void forward(const cpu::CpuBackend& be, const float* x, float* out, int M);

  size_t bytes() const;            // resident weight bytes
  size_t active_bytes() const;     // what one token reads: router, shared expert and n_used experts (on average)
  size_t active_elements() const;  // weight elements one token multiplies

 private:
  struct Expert {
    Linear gate_up, down;
    std::vector<float> gate_up_bias, down_bias;  // [2 * expert_hidden], [dim] when expert_biases
  };
  struct Scratch {
    std::vector<float> gathered, gate_up, hidden, y, part;
  };
  // Rows x[rows[i]] through one expert into s.y: gate and up, the activation, down.
  void run_expert(const cpu::CpuBackend& be, const Expert& e, int hidden, const float* x, const std::vector<int>& rows,
                  Scratch& s) const;
  // Each routed expert's rows (rows_), their outputs into slots_ at (token, slot) (slots_of_rows_).
  void run_routed(const cpu::CpuBackend& be, const float* x);
  MoeConfig moe_;
  FfnActivation activation_ = FfnActivation::Silu;
  int dim_ = 0;
  Linear router_;
  std::vector<float> router_bias_;
  std::vector<Expert> experts_;
  Expert shared_;  // empty unless moe_.shared_hidden > 0
  std::vector<float> shared_gate_;
  // Scratch reused across steps (one Scratch per thread running experts), so a step allocates nothing once warm.
  std::vector<float> logits_, weights_, slots_, part_;
  std::vector<int> chosen_, active_;                    // [M][n_used] experts; the experts routed to (or rows)
  std::vector<std::vector<int>> rows_, slots_of_rows_;  // per expert: its tokens, and their (token, slot) indices
  std::vector<Scratch> scratch_;
};

}  // namespace parley
