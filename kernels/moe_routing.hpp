// A mixture-of-experts router's choice for one token, defined once in scalar code that runs on the host and in
// CUDA kernels: the CPU model (model/moe_ffn.cpp) and the CUDA backend route the same logits to the same experts
// with the same weights, bit for bit.
#pragma once
#include <cmath>

#include "kernels/host_device.hpp"

namespace parley::moe {

struct Routing {
  int n_experts = 0, n_used = 0;
  bool softmax_all = true;  // softmax over every expert, then the top k; false: the top k logits, then a softmax
  bool normalize = false;   // the chosen weights divided by their sum
  float scale = 1.0f;
};

PARLEY_HD inline void softmax_in_place(float* v, int n) {
  float top = v[0];
  for (int i = 1; i < n; ++i) top = v[i] > top ? v[i] : top;
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += (v[i] = expf(v[i] - top));
  for (int i = 0; i < n; ++i) v[i] /= sum;
}

// logits[n_experts] (turned into probabilities in place) -> experts[n_used] best first, ties to the lower index,
// and their weights.
PARLEY_HD inline void route(float* logits, const Routing& r, int* experts, float* weights) {
  if (r.softmax_all) softmax_in_place(logits, r.n_experts);
  for (int s = 0; s < r.n_used; ++s) {
    int best = -1;
    for (int e = 0; e < r.n_experts; ++e) {
      bool taken = false;
      for (int t = 0; t < s; ++t) taken = taken || experts[t] == e;
      if (!taken && (best < 0 || logits[e] > logits[best])) best = e;  // strict: an equal later one never wins
    }
    experts[s] = best;
    weights[s] = logits[best];
  }
  if (!r.softmax_all) softmax_in_place(weights, r.n_used);
  if (r.normalize) {
    float sum = 0.0f;
    for (int s = 0; s < r.n_used; ++s) sum += weights[s];
    sum = sum > 6.103515625e-5f ? sum : 6.103515625e-5f;  // as llama.cpp: never a division by zero
    for (int s = 0; s < r.n_used; ++s) weights[s] /= sum;
  }
  if (r.scale != 1.0f)
    for (int s = 0; s < r.n_used; ++s) weights[s] *= r.scale;
}

}  // namespace parley::moe
