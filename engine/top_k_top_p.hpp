// vLLM's top_k and top_p cuts on one row of unnormalized weights (>= 0), in time linear in the vocabulary:
// weights are bucketed by exponent and top 3 mantissa bits (a bucket spans a factor of 2^(1/8)), and only the
// bucket where a cut falls is ordered. Order is by weight descending, then id ascending: a strict order, so
// the kept set is a function of the row alone.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/sampling_kernels.hpp"

namespace parley {

class TopKTopP {
 public:
  explicit TopKTopP(const cpu::SamplingKernels& kernels) : kernels_(kernels) {}

  // Zeroes all but the k largest weights; ties with the k-th survive, as in vLLM.
  void top_k(std::span<float> w, int k);
  // Keeps the smallest prefix (in that order) whose mass reaches top_p of the row's mass, always the top weight.
  // The prefix's mass, in double, adds whole buckets (each summed in id order) in order, then the weights of the
  // bucket where it crosses one by one; when rounding keeps that walk below the target, the bucket stays whole.
  void top_p(std::span<float> w, float top_p);

 private:
  void histogram(std::span<const float> w);                          // count_ and mass_ per bucket
  std::span<uint64_t> bucket_keys(std::span<const float> w, int b);  // bucket b's order keys, in id order

  cpu::SamplingKernels kernels_;  // a copy: function pointers
  std::vector<int> count_;
  std::vector<double> mass_;
  std::vector<uint64_t> keys_;
};

}  // namespace parley
