// The encoder's kernels: bidirectional attention (meta.key_ends), LayerNorm with a bias and the ungated GELU.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/reference.hpp"
#include "tests/kernel_inputs.hpp"

using namespace parley;
using namespace parley::cpu;
using test::random_vec;
using test::supported_isas;

namespace {

struct TwoSequences {
  static constexpr int n_heads = 4, n_kv_heads = 2, head_dim = 24, kv_dim = n_kv_heads * head_dim, block_size = 4;
  static constexpr int max_blocks = 16, num_blocks = 2 * max_blocks;
  std::vector<float> keys = random_vec(size_t(num_blocks) * block_size * kv_dim, 31);
  std::vector<float> values = random_vec(keys.size(), 32);
  std::vector<int> tables = std::vector<int>(2 * max_blocks);
  // A 37-token sequence and a 5-token one, as a step holding two whole encoder inputs lays them out.
  std::vector<int> positions, token_seq, key_ends;
  TwoSequences() {
    for (int i = 0; i < max_blocks; ++i)
      tables[size_t(i)] = num_blocks - 1 - 2 * i, tables[size_t(max_blocks + i)] = 2 * i;
    for (auto [seq, len] : {std::pair{0, 37}, std::pair{1, 5}})
      for (int p = 0; p < len; ++p) positions.push_back(p), token_seq.push_back(seq), key_ends.push_back(len);
  }
  KvLayerView kv() { return {keys.data(), values.data(), block_size, kv_dim}; }
  AttentionMetadata meta(bool bidirectional) const {
    return {int(positions.size()), positions.data(), token_seq.data(),
            tables.data(),         max_blocks,       bidirectional ? key_ends.data() : nullptr};
  }
};

}  // namespace

TEST_CASE("bidirectional attention: every token sees its whole sequence, per ISA against the reference",
          "[kernels][encoder]") {
  TwoSequences s;
  const int n = int(s.positions.size()), width = s.n_heads * s.head_dim;
  const auto q = random_vec(size_t(n) * width, 33);
  std::vector<float> want(q.size()), causal(q.size());
  reference::paged_attention(q.data(), s.kv(), s.meta(true), s.n_heads, s.n_kv_heads, s.head_dim, want.data());
  reference::paged_attention(q.data(), s.kv(), s.meta(false), s.n_heads, s.n_kv_heads, s.head_dim, causal.data());
  // Each sequence's last token sees the same keys either way; the first does not.
  REQUIRE(std::memcmp(&want[size_t(36) * width], &causal[size_t(36) * width], size_t(width) * 4) == 0);
  REQUIRE(std::memcmp(want.data(), causal.data(), size_t(width) * 4) != 0);
  for (Isa isa : supported_isas()) {
    INFO("isa " << isa_name(isa));
    std::vector<float> got(q.size());
    CpuBackend(2, isa).paged_attention(q.data(), s.kv(), s.meta(true), s.n_heads, s.n_kv_heads, s.head_dim, got.data());
    for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).margin(2e-5));
    // A token's bits are those of the same query placed last in a causal pass over its sequence.
    for (int t = 0; t < n; ++t) {
      const int last = s.key_ends[size_t(t)] - 1;
      std::vector<float> alone(static_cast<size_t>(width));
      const AttentionMetadata as_last{1, &last, &s.token_seq[size_t(t)], s.tables.data(), s.max_blocks};
      CpuBackend(1, isa).paged_attention(q.data() + size_t(t) * width, s.kv(), as_last, s.n_heads, s.n_kv_heads,
                                         s.head_dim, alone.data());
      INFO("token " << t);
      REQUIRE(std::memcmp(alone.data(), got.data() + size_t(t) * width, alone.size() * 4) == 0);
    }
  }
}

TEST_CASE("layernorm: zero mean, unit variance, then weight and bias", "[kernels][encoder]") {
  // numpy: x = [1, 2, 4, 9]; (x - x.mean()) / np.sqrt(x.var() + 1e-5) * w + b
  const std::vector<float> x{1, 2, 4, 9}, w{1, 2, 0.5f, -1}, b{0, 1, -1, 0.25f};
  std::vector<float> out(4);
  CpuBackend(1).layernorm(x.data(), w.data(), b.data(), out.data(), 1, 4, 1e-5f);
  const double mean = 4.0, sd = std::sqrt(9.5 + 1e-5);  // var = (9 + 4 + 0 + 25) / 4
  for (int i = 0; i < 4; ++i)
    REQUIRE(out[size_t(i)] == Approx((x[size_t(i)] - mean) / sd * w[size_t(i)] + b[size_t(i)]).margin(1e-6));
  // Every ISA within float rounding of the reference's double sums, at a width with a part-vector tail.
  const int odd = 389;
  const auto row = random_vec(odd, 44), w389 = random_vec(odd, 45), b389 = random_vec(odd, 46);
  std::vector<float> want(static_cast<size_t>(odd)), got(static_cast<size_t>(odd));
  reference::layernorm(row.data(), w389.data(), b389.data(), want.data(), 1, odd, 1e-5f);
  for (Isa isa : supported_isas()) {
    INFO("isa " << isa_name(isa));
    CpuBackend(1, isa).layernorm(row.data(), w389.data(), b389.data(), got.data(), 1, odd, 1e-5f);
    for (int i = 0; i < odd; ++i) REQUIRE(got[size_t(i)] == Approx(want[size_t(i)]).margin(2e-6));
  }
  // Rows are independent: a row's bits alone and among others, on 1 and 2 threads.
  const int M = 300, dim = 384;
  const auto rows = random_vec(size_t(M) * dim, 41), weight = random_vec(dim, 42), bias = random_vec(dim, 43);
  std::vector<float> all(rows.size()), one(static_cast<size_t>(dim));
  CpuBackend(2).layernorm(rows.data(), weight.data(), bias.data(), all.data(), M, dim, 1e-12f);
  CpuBackend(1).layernorm(rows.data() + size_t(123) * dim, weight.data(), bias.data(), one.data(), 1, dim, 1e-12f);
  REQUIRE(std::memcmp(one.data(), all.data() + size_t(123) * dim, size_t(dim) * 4) == 0);
}

TEST_CASE("gelu_rows and geglu_rows are GELU's tanh approximation, per ISA within a few ulp", "[kernels][encoder]") {
  // PyTorch: gelu(torch.tensor([1.0, -2.0, 0.5]), approximate="tanh") = [0.8411920, -0.0454023, 0.3457140]
  for (Isa isa : supported_isas()) {
    INFO("isa " << isa_name(isa));
    std::vector<float> x{1.0f, -2.0f, 0.5f};
    CpuBackend(1, isa).gelu_rows(x.data(), nullptr, 1, 3);
    REQUIRE(x[0] == Approx(0.8411920f).margin(1e-6));
    REQUIRE(x[1] == Approx(-0.0454023f).margin(1e-6));
    REQUIRE(x[2] == Approx(0.3457140f).margin(1e-6));
    // Over +-12, a tail of 13 (the padded part-vector), against the exact value in double (float underflows past
    // 1e-37).
    const int M = 3, n = 61;
    std::vector<float> g(size_t(M) * n), gate_up(size_t(M) * 2 * n), gated(size_t(M) * n);
    for (int i = 0; i < M * n; ++i) g[size_t(i)] = -12.0f + 24.0f * float(i) / float(M * n);
    for (int m = 0; m < M; ++m)
      for (int i = 0; i < n; ++i)
        gate_up[size_t(m) * 2 * n + i] = g[size_t(m) * n + i], gate_up[size_t(m) * 2 * n + n + i] = 0.5f + float(i);
    std::vector<float> y = g;
    CpuBackend(2, isa).gelu_rows(y.data(), nullptr, M, n);
    CpuBackend(2, isa).geglu_rows(gate_up.data(), gated.data(), M, n);
    for (int i = 0; i < M * n; ++i) {
      const double v = g[size_t(i)], up = 0.5 + i % n;
      // 0.5 v (1 + tanh u) as v / (1 + e^(-2u)): 1 + tanh u cancels to 0 in double far below zero
      const double s2u = 2.0 * 0.7978845608028654 * (v + 0.044715 * v * v * v);
      const double exact = v / (1.0 + std::exp(-s2u));
      // 2u itself is rounded to float: e^(-2u) carries |2u| ulp of relative error.
      const double rel = 5e-7 * (1.0 + std::fabs(s2u));
      INFO("x = " << v << " got " << y[size_t(i)] << " exact " << exact);
      REQUIRE(std::fabs(y[size_t(i)] - exact) <= rel * std::fabs(exact) + 1e-12);
      REQUIRE(std::fabs(gated[size_t(i)] - exact * up) <= rel * std::fabs(exact * up) + 1e-12);
    }
  }
}

TEST_CASE("add_rows and split_columns: bias, then residual, on rows split across threads, -0 kept", "[kernels]") {
  const int M = 67, n = 600;  // M * n past split_rows' threshold: two threads
  const std::vector<float> x0 = random_vec(size_t(M) * n, 41), bias = random_vec(size_t(n), 42),
                           residual = random_vec(size_t(M) * n, 43);
  for (int mode = 0; mode < 3; ++mode) {  // bias and residual, bias only, residual only
    INFO("mode " << mode);
    const float* b = mode == 2 ? nullptr : bias.data();
    const float* r = mode == 1 ? nullptr : residual.data();
    std::vector<float> got = x0;
    CpuBackend(2).add_rows(got.data(), b, r, M, n);
    for (size_t i = 0; i < got.size(); ++i) {
      float want = x0[i];
      if (b) want = want + b[i % n];
      if (r) want = want + r[i];
      REQUIRE(got[i] == want);
    }
  }
  // Q/K/V widths 300, 150, 150 out of rows of 600.
  std::vector<float> q(size_t(M) * 300), k(size_t(M) * 150), v(size_t(M) * 150);
  std::vector<float> signed_zero = x0;
  signed_zero[5] = -0.0f;  // copied as -0 without a bias (x + 0.0f would give +0)
  for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
    CpuBackend(2).split_columns(signed_zero.data(), b, M, {{q.data(), 300}, {k.data(), 150}, {v.data(), 150}});
    for (int m = 0; m < M; ++m)
      for (int j = 0; j < n; ++j) {
        const float want = b ? signed_zero[size_t(m) * n + j] + b[j] : signed_zero[size_t(m) * n + j];
        const float got = j < 300   ? q[size_t(m) * 300 + j]
                          : j < 450 ? k[size_t(m) * 150 + j - 300]
                                    : v[size_t(m) * 150 + j - 450];
        REQUIRE(std::memcmp(&got, &want, 4) == 0);
      }
  }
}
