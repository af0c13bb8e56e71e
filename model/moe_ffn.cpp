#include "model/moe_ffn.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace parley {
namespace {

// gpt-oss's clamped SwiGLU (its reference implementation's constants).
constexpr float kOaiAlpha = 1.702f, kOaiLimit = 7.0f;

void add_into(float* x, const float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace

ExpertChoice route_token(const float* logits, const MoeConfig& moe) {
  std::vector<float> probs(logits, logits + moe.n_experts);
  ExpertChoice c{std::vector<int>(size_t(moe.n_used)), std::vector<float>(size_t(moe.n_used))};
  moe::route(probs.data(), moe.routing(), c.experts.data(), c.weights.data());
  return c;
}

MoeFfn::MoeFfn(const LlamaConfig& c, ExpertWeights& w, cpu::QuantIsa isa)
    : moe_(c.moe), activation_(c.activation), dim_(c.dim) {
  const size_t E = size_t(moe_.n_experts), H = size_t(moe_.expert_hidden), dim = size_t(c.dim);
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("expert weights: " + what);
  };
  need(w.gate.size() == E && w.up.size() == E && w.down.size() == E,
       std::to_string(w.gate.size()) + "/" + std::to_string(w.up.size()) + "/" + std::to_string(w.down.size()) +
           " gate/up/down matrices for " + std::to_string(E) + " experts");
  need(w.router.size() == E * dim, "the router has the wrong size");
  router_ = Linear::stack(c.dim, {&w.router}, isa);
  if (moe_.expert_biases) {
    need(w.router_bias.size() == E && w.gate_bias.size() == E * H && w.up_bias.size() == E * H &&
             w.down_bias.size() == E * dim,
         "the biases have the wrong size");
    router_bias_ = std::move(w.router_bias);
  }
  experts_.resize(E);
  for (size_t e = 0; e < E; ++e) {
    need(w.gate[e].size() == H * dim && w.up[e].size() == H * dim && w.down[e].size() == H * dim,
         "expert " + std::to_string(e) + " has matrices of the wrong size");
    Expert& x = experts_[e];
    x.gate_up = Linear::stack(c.dim, {&w.gate[e], &w.up[e]}, isa);
    x.down = Linear::stack(moe_.expert_hidden, {&w.down[e]}, isa);
    if (moe_.expert_biases) {
      x.gate_up_bias.assign(w.gate_bias.begin() + std::ptrdiff_t(e * H),
                            w.gate_bias.begin() + std::ptrdiff_t((e + 1) * H));
      x.gate_up_bias.insert(x.gate_up_bias.end(), w.up_bias.begin() + std::ptrdiff_t(e * H),
                            w.up_bias.begin() + std::ptrdiff_t((e + 1) * H));
      x.down_bias.assign(w.down_bias.begin() + std::ptrdiff_t(e * dim),
                         w.down_bias.begin() + std::ptrdiff_t((e + 1) * dim));
    }
  }
  if (moe_.shared_hidden > 0) {
    const size_t S = size_t(moe_.shared_hidden);
    need(w.shared_gate.size() == dim, "the shared expert's gate has the wrong size");
    need(w.shared_w_gate.size() == S * dim && w.shared_w_up.size() == S * dim && w.shared_w_down.size() == S * dim,
         "the shared expert has matrices of the wrong size");
    shared_gate_ = std::move(w.shared_gate);
    shared_.gate_up = Linear::stack(c.dim, {&w.shared_w_gate, &w.shared_w_up}, isa);
    shared_.down = Linear::stack(moe_.shared_hidden, {&w.shared_w_down}, isa);
  }
  w = ExpertWeights{};
}

size_t MoeFfn::bytes() const {
  size_t total = router_.bytes() + shared_.gate_up.bytes() + shared_.down.bytes();
  for (const Expert& e : experts_) total += e.gate_up.bytes() + e.down.bytes();
  return total;
}

size_t MoeFfn::active_bytes() const {
  size_t experts = 0;
  for (const Expert& e : experts_) experts += e.gate_up.bytes() + e.down.bytes();
  return router_.bytes() + shared_.gate_up.bytes() + shared_.down.bytes() +
         experts / size_t(moe_.n_experts) * size_t(moe_.n_used);
}

size_t MoeFfn::active_elements() const { return size_t(moe_.ffn_elements(dim_, true)); }

void MoeFfn::run_expert(const cpu::CpuBackend& be, const Expert& e, int hidden, const float* x,
                        const std::vector<int>& rows, Scratch& s) const {
  const int R = int(rows.size()), dim = dim_;
  const size_t H = size_t(hidden);
  s.gathered.resize(size_t(R) * size_t(dim));
  for (int i = 0; i < R; ++i)
    std::copy_n(x + size_t(rows[size_t(i)]) * size_t(dim), dim, s.gathered.data() + size_t(i) * size_t(dim));
  s.gate_up.resize(size_t(R) * 2 * H);
  s.hidden.resize(size_t(R) * H);
  s.y.resize(size_t(R) * size_t(dim));
  e.gate_up.matmul(be, s.gathered.data(), s.gate_up.data(), R, s.part);
  if (!e.gate_up_bias.empty())
    for (int i = 0; i < R; ++i) add_into(s.gate_up.data() + size_t(i) * 2 * H, e.gate_up_bias.data(), 2 * H);
  if (activation_ == FfnActivation::SwigluOai) {
    for (int i = 0; i < R; ++i) {
      const float* gate = s.gate_up.data() + size_t(i) * 2 * H;
      const float* up = gate + hidden;
      float* h = s.hidden.data() + size_t(i) * H;
      for (int j = 0; j < hidden; ++j) {
        const float g = std::min(gate[j], kOaiLimit), u = std::clamp(up[j], -kOaiLimit, kOaiLimit);
        h[j] = g / (1.0f + std::exp(kOaiAlpha * -g)) * (u + 1.0f);
      }
    }
  } else {
    be.swiglu_rows(s.gate_up.data(), s.hidden.data(), R, hidden);
  }
  e.down.matmul(be, s.hidden.data(), s.y.data(), R, s.part);
  if (!e.down_bias.empty())
    for (int i = 0; i < R; ++i) add_into(s.y.data() + size_t(i) * size_t(dim), e.down_bias.data(), size_t(dim));
}

void MoeFfn::run_routed(const cpu::CpuBackend& be, const float* x) {
  const std::vector<std::vector<int>>& rows = rows_;
  const std::vector<std::vector<int>>& slots = slots_of_rows_;
  std::vector<int>& active = active_;
  active.clear();
  for (int e = 0; e < moe_.n_experts; ++e)
    if (!rows[size_t(e)].empty()) active.push_back(e);
  // Experts side by side, each on one thread: one fork per layer instead of two per expert. A row's bits are the
  // same on one thread as on many (the kernels split over panels only), so this changes no token.
  const int threads = std::min(be.threads(), int(active.size()));
  const cpu::CpuBackend one(1, be.isa());
  const cpu::CpuBackend& inner = threads > 1 ? one : be;
  scratch_.resize(size_t(std::max(threads, 1)));
  const size_t dim = size_t(dim_);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
  for (size_t i = 0; i < active.size(); ++i) {
    const size_t e = size_t(active[i]);
    Scratch& s = scratch_[size_t(omp_get_thread_num())];
    run_expert(inner, experts_[e], moe_.expert_hidden, x, rows[e], s);
    for (size_t r = 0; r < rows[e].size(); ++r)
      std::copy_n(s.y.data() + r * dim, dim, slots_.data() + size_t(slots[e][r]) * dim);
  }
}

void MoeFfn::forward(const cpu::CpuBackend& be, const float* x, float* out, int M) {
  const int E = moe_.n_experts, k = moe_.n_used, dim = dim_;
  logits_.resize(size_t(M) * size_t(E));
  router_.matmul(be, x, logits_.data(), M, part_);
  // Each token's choice (routed in place on its logits); then, per expert, the (token, slot) pairs routed to it.
  chosen_.resize(size_t(M) * size_t(k));
  weights_.resize(size_t(M) * size_t(k));
  rows_.resize(size_t(E));
  slots_of_rows_.resize(size_t(E));
  for (int e = 0; e < E; ++e) rows_[size_t(e)].clear(), slots_of_rows_[size_t(e)].clear();
  const moe::Routing routing = moe_.routing();
  for (int t = 0; t < M; ++t) {
    float* l = logits_.data() + size_t(t) * size_t(E);
    if (!router_bias_.empty()) add_into(l, router_bias_.data(), size_t(E));
    moe::route(l, routing, chosen_.data() + size_t(t) * size_t(k), weights_.data() + size_t(t) * size_t(k));
    for (int s = 0; s < k; ++s) {
      const int e = chosen_[size_t(t) * size_t(k) + size_t(s)];
      rows_[size_t(e)].push_back(t);
      slots_of_rows_[size_t(e)].push_back(t * k + s);
    }
  }
  slots_.resize(size_t(M) * size_t(k) * size_t(dim));
  run_routed(be, x);
  // Weighted, summed in the token's slot order (best expert first), as llama.cpp adds its views.
  for (int t = 0; t < M; ++t) {
    float* o = out + size_t(t) * size_t(dim);
    for (int s = 0; s < k; ++s) {
      const float w = weights_[size_t(t) * size_t(k) + size_t(s)];
      const float* y = slots_.data() + (size_t(t) * size_t(k) + size_t(s)) * size_t(dim);
      if (s == 0)
        for (int j = 0; j < dim; ++j) o[j] = y[j] * w;
      else
        for (int j = 0; j < dim; ++j) o[j] += y[j] * w;
    }
  }
  if (moe_.shared_hidden > 0) {
    active_.resize(size_t(M));  // every token, in order
    std::iota(active_.begin(), active_.end(), 0);
    scratch_.resize(std::max<size_t>(scratch_.size(), 1));
    Scratch& s = scratch_[0];
    run_expert(be, shared_, moe_.shared_hidden, x, active_, s);
    for (int t = 0; t < M; ++t) {
      const float* xt = x + size_t(t) * size_t(dim);
      float g = 0.0f;
      for (int j = 0; j < dim; ++j) g += xt[j] * shared_gate_[size_t(j)];
      g = 1.0f / (1.0f + std::exp(-g));
      float* o = out + size_t(t) * size_t(dim);
      const float* y = s.y.data() + size_t(t) * size_t(dim);
      for (int j = 0; j < dim; ++j) o[j] += y[j] * g;
    }
  }
}

}  // namespace parley
