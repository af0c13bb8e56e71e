// The sampler's row kernels against their scalar definitions (kernels/sampling_math.hpp) on every ISA this CPU
// runs, the exp against std::exp, and the top_k / top_p cuts against a full sort of the row.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "engine/top_k_top_p.hpp"
#include "kernel_inputs.hpp"
#include "kernels/cpu/sampling_kernels.hpp"
#include "kernels/sampling_math.hpp"

using namespace parley;

namespace {

// Logits with what rows really hold at times: -inf (a grammar's mask), NaN, both zeros and repeated values.
std::vector<float> awkward_row(int n, uint64_t seed, float scale) {
  std::vector<float> x = test::random_vec(size_t(n), seed, scale);
  for (int i = 0; i < n; ++i) {
    if (i % 11 == 3) x[size_t(i)] = -INFINITY;
    if (i % 13 == 5) x[size_t(i)] = x[size_t(i / 2)];  // ties
    if (i % 29 == 7) x[size_t(i)] = i % 2 ? 0.0f : -0.0f;
    if (i % 37 == 9) x[size_t(i)] = NAN;
  }
  return x;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("sampling kernels compute their scalar definitions' bits on every ISA", "[sampling-kernels]") {
  REQUIRE(cpu::best_sampling_kernels().isa == cpu::sampling_kernels(cpu::Isa::Auto).isa);
  for (cpu::Isa isa : test::supported_isas()) {
    const cpu::SamplingKernels k = cpu::sampling_kernels(isa);
    REQUIRE(k.isa == isa);
    for (int n : {1, 7, 8, 15, 16, 17, 31, 33, 100, 513, 32000}) {
      for (uint64_t seed : {1u, 2u}) {
        INFO(cpu::isa_name(isa) << ", n " << n << ", seed " << seed);
        const std::vector<float> x = awkward_row(n, seed + uint64_t(n), 8.0f);
        // Max and argmax: the same value (a vector's max may say -0 for +0) and the same first index.
        REQUIRE(k.max_value(x.data(), n) == sampling::max_value(x.data(), n));
        REQUIRE(k.argmax(x.data(), n) == sampling::argmax(x.data(), n));
        const float scale = 1.0f / 0.7f, shift = sampling::max_value(x.data(), n) * scale;
        std::vector<float> got(x.size()), want(x.size());
        k.exp_scaled(x.data(), n, scale, shift, got.data());
        sampling::exp_scaled(x.data(), n, scale, shift, want.data());
        REQUIRE(same_bits(got, want));
        const float cut = want[size_t(n / 2)];
        std::vector<float> cut_got = want, cut_want = want;
        k.zero_below(cut_got.data(), n, cut);
        sampling::zero_below(cut_want.data(), n, cut);
        REQUIRE(same_bits(cut_got, cut_want));
        const auto weight = [&](int i) { return want[size_t(i)]; };
        const float total = sampling::cdf_total(weight, n);
        REQUIRE(std::bit_cast<uint32_t>(k.cdf_total(want.data(), n)) == std::bit_cast<uint32_t>(total));
        REQUIRE(std::bit_cast<uint64_t>(k.cdf_total_double(want.data(), n)) ==
                std::bit_cast<uint64_t>(sampling::cdf_total<double>(weight, n)));
        for (float u : {0.0f, 1e-7f, 0.25f, 0.5f, 0.999f, 0.99999994f, 1.0f, 2.0f}) {
          const float target = u * total;
          REQUIRE(k.inverse_cdf(want.data(), n, target) == sampling::inverse_cdf(weight, n, target));
        }
      }
    }
  }
}

TEST_CASE("the double total keeps float precision at a large vocabulary where the float one drifts",
          "[sampling-kernels]") {
  // 2^17 weights near 1: blocks of 16 exact to float, their 8192 masses added in double.
  const int n = 1 << 17;
  std::vector<float> w = test::random_vec(size_t(n), 7, 0.25f);
  long double exact = 0;
  for (float& x : w) x = 1.0f + x, exact += x;
  for (cpu::Isa isa : test::supported_isas()) {
    const cpu::SamplingKernels k = cpu::sampling_kernels(isa);
    INFO(cpu::isa_name(isa));
    REQUIRE(std::abs(k.cdf_total_double(w.data(), n) - double(exact)) < 1e-6 * double(exact));
  }
  // The float total is what the draw uses (the CUDA body's arithmetic); it is not for normalizing logprobs.
  REQUIRE(std::abs(double(sampling::cdf_total([&](int i) { return w[size_t(i)]; }, n)) - double(exact)) >
          1e-6 * double(exact));
}

TEST_CASE("the inverse CDF lands on the token whose cumulative mass passes the target", "[sampling-kernels]") {
  std::vector<float> w(40, 0.0f);
  w[3] = 1.0f, w[17] = 2.0f, w[18] = 0.5f, w[39] = 4.0f;  // blocks 0, 1 and 2 of 16 ids
  const auto weight = [&](int i) { return w[size_t(i)]; };
  REQUIRE(sampling::cdf_total(weight, 40) == 7.5f);
  REQUIRE(sampling::inverse_cdf(weight, 40, 0.0f) == 3);
  REQUIRE(sampling::inverse_cdf(weight, 40, 0.99f) == 3);
  REQUIRE(sampling::inverse_cdf(weight, 40, 1.0f) == 17);
  REQUIRE(sampling::inverse_cdf(weight, 40, 3.25f) == 18);
  REQUIRE(sampling::inverse_cdf(weight, 40, 3.5f) == 39);
  REQUIRE(sampling::inverse_cdf(weight, 40, 7.49f) == 39);
  REQUIRE(sampling::inverse_cdf(weight, 40, 7.5f) == -1);
  for (cpu::Isa isa : test::supported_isas())
    for (float t : {0.0f, 0.99f, 1.0f, 3.25f, 3.5f, 7.49f, 7.5f})
      REQUIRE(cpu::sampling_kernels(isa).inverse_cdf(w.data(), 40, t) == sampling::inverse_cdf(weight, 40, t));
}

TEST_CASE("the sampler's exp is within 2 ulp of std::exp, exactly 1 at 0 and never above 1", "[sampling-kernels]") {
  REQUIRE(sampling::exp_nonpositive(0.0f) == 1.0f);
  REQUIRE(sampling::exp_nonpositive(-0.0f) == 1.0f);
  REQUIRE(sampling::exp_nonpositive(-INFINITY) == 0.0f);
  REQUIRE(sampling::exp_nonpositive(NAN) == 0.0f);
  REQUIRE(sampling::exp_nonpositive(-87.5f) == 0.0f);
  double worst = 0.0;
  for (float x = -86.99f; x <= 0.0f; x = std::nextafter(x + 0.0007f, 1.0f)) {
    const float e = sampling::exp_nonpositive(x);
    REQUIRE(e <= 1.0f);
    const double want = std::exp(double(x));
    worst = std::max(worst, std::abs(e - want) / (want * std::numeric_limits<float>::epsilon()));
  }
  for (float x = -1e-3f; x < 0.0f; x = std::nextafter(x, 1.0f) + 1e-9f) REQUIRE(sampling::exp_nonpositive(x) <= 1.0f);
  INFO("worst error " << worst << " ulp");
  REQUIRE(worst < 2.0);
}

namespace {

// Weights e^(x - max) of a row: flat, peaked, and with ties (logits on a coarse grid).
std::vector<float> weights_row(int n, uint64_t seed, float spread, bool ties) {
  std::vector<float> x = test::random_vec(size_t(n), seed, spread);
  if (ties)
    for (float& v : x) v = std::round(v * 4.0f) / 4.0f;
  std::vector<float> w(x.size());
  sampling::exp_scaled(x.data(), n, 1.0f, sampling::max_value(x.data(), n), w.data());
  return w;
}

// Ids by weight descending, then id ascending: the full sort the cuts must agree with.
std::vector<int> sorted_ids(const std::vector<float>& w) {
  std::vector<int> ids(w.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::sort(ids.begin(), ids.end(),
            [&](int a, int b) { return w[size_t(a)] > w[size_t(b)] || (w[size_t(a)] == w[size_t(b)] && a < b); });
  return ids;
}

}  // namespace

TEST_CASE("top_k keeps the k largest weights and their ties, as a full sort does", "[sampling-kernels]") {
  for (cpu::Isa isa : test::supported_isas())
    for (int n : {5, 1000, 32000})
      for (bool ties : {false, true})
        for (float spread : {2.0f, 12.0f, 60.0f})
          for (int k : {1, 2, 50, 999, n - 1}) {
            if (k < 1 || k >= n) continue;
            INFO(cpu::isa_name(isa) << ", n " << n << ", ties " << ties << ", spread " << spread << ", k " << k);
            const std::vector<float> w = weights_row(n, uint64_t(n) + uint64_t(spread), spread, ties);
            const std::vector<int> ids = sorted_ids(w);
            const float kth = w[size_t(ids[size_t(k - 1)])];
            std::vector<float> got = w;
            TopKTopP(cpu::sampling_kernels(isa)).top_k(got, k);
            for (size_t i = 0; i < w.size(); ++i) REQUIRE(got[i] == (w[i] >= kth ? w[i] : 0.0f));
          }
}

TEST_CASE("top_p keeps the shortest prefix of the sorted row whose mass reaches top_p", "[sampling-kernels]") {
  for (cpu::Isa isa : test::supported_isas())
    for (int n : {5, 1000, 32000})
      for (bool ties : {false, true})
        for (float spread : {2.0f, 12.0f, 60.0f})
          for (float top_p : {0.01f, 0.3f, 0.9f, 0.99f}) {
            INFO(cpu::isa_name(isa) << ", n " << n << ", ties " << ties << ", spread " << spread << ", top_p "
                                    << top_p);
            const std::vector<float> w = weights_row(n, uint64_t(n) * 3 + uint64_t(spread), spread, ties);
            std::vector<float> got = w;
            TopKTopP(cpu::sampling_kernels(isa)).top_p(got, top_p);
            // What stays is a prefix of the full sort, unchanged.
            const std::vector<int> ids = sorted_ids(w);
            size_t kept = 0;
            while (kept < ids.size() && got[size_t(ids[kept])] != 0.0f) ++kept;
            REQUIRE(kept >= 1);
            for (size_t r = 0; r < ids.size(); ++r)
              REQUIRE(got[size_t(ids[r])] == (r < kept ? w[size_t(ids[r])] : 0.0f));
            // The prefix reaches top_p of the mass, and without its last weight it would not (float rounding aside).
            double total = 0.0, mass = 0.0;
            for (float v : w) total += v;
            for (size_t r = 0; r < kept; ++r) mass += w[size_t(ids[r])];
            const double last = w[size_t(ids[kept - 1])], slack = 1e-6 * total;
            REQUIRE(mass >= top_p * total - slack);
            REQUIRE(mass - last < top_p * total + slack);
          }
}
