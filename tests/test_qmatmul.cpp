// The quantized matmul (kernels/cpu/quant_matrix.hpp), every weight type on every kernel variant this CPU runs:
// the dequantized reference within float rounding, exact integer dots, the activation-quantization error bound,
// and a row's bits alone, in any batch, on any thread count and on any ISA.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "test_support.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/quant_matrix.hpp"
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/half.hpp"
#include "kernels/quant/quantize.hpp"

using namespace parley;
using namespace parley::cpu;
using quant::GgmlType;

using parley::test::error_of;

namespace {

struct TypeCase {
  GgmlType type;
  std::vector<int> ks;  // awkward row lengths: whole blocks, not powers of two
};

const std::vector<TypeCase>& type_cases() {
  static const std::vector<TypeCase> cases = {
      {GgmlType::Q8_0, {32, 224, 1184}},
      {GgmlType::Q4_0, {32, 224, 1184}},
      {GgmlType::Q4_1, {32, 224, 1184}},
      {GgmlType::Q5_0, {32, 224, 1184}},
      {GgmlType::Q5_1, {32, 224, 1184}},
      {GgmlType::Q4_K, {256, 512, 2816, 4096}},
      {GgmlType::Q5_K, {256, 512, 2816, 4096}},
      {GgmlType::Q6_K, {256, 512, 2816, 4096}},
      {GgmlType::F16, {1, 37, 1184}},
      {GgmlType::BF16, {1, 37, 1184}},
      {GgmlType::MXFP4, {32, 224, 1184}},
      {GgmlType::Q3_K, {256, 512, 2816, 4096}},
      {GgmlType::IQ4_XS, {256, 512, 2816, 4096}},
  };
  return cases;
}
constexpr int kNs[] = {1, 7, 33, 100};
constexpr int kMs[] = {1, 3, 17, 64};
constexpr int kMaxM = 64;

std::string name_of(GgmlType type) { return quant::ggml_type_name(static_cast<uint32_t>(type)); }
bool k_quant(GgmlType type) {
  return type == GgmlType::Q3_K || type == GgmlType::Q4_K || type == GgmlType::Q5_K || type == GgmlType::Q6_K ||
         type == GgmlType::IQ4_XS;
}
bool floats_in(GgmlType type) { return type == GgmlType::F16 || type == GgmlType::BF16; }

// Every variant this CPU runs; the others are named once, as skipped.
std::vector<QuantIsa> runnable_isas() {
  std::vector<QuantIsa> out;
  for (QuantIsa isa : {QuantIsa::Generic, QuantIsa::Avx2, QuantIsa::Avx512, QuantIsa::Avx512Vnni, QuantIsa::Amx}) {
    if (quant_isa_supported(isa))
      out.push_back(isa);
    else
      WARN("skipping the " << quant_isa_name(isa) << " kernels: this CPU does not support them");
  }
  return out;
}

struct Random {
  uint64_t s;
  explicit Random(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  float uniform() {  // [-1, 1)
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return static_cast<float>(s >> 40) / float(1 << 24) * 2.0f - 1.0f;
  }
  float normalish() { return (uniform() + uniform() + uniform()) * 0.577f; }
};

// Activations like a transformer's: unit-scale noise with a rare outlier channel ten times larger.
std::vector<float> activations(int M, int K, uint64_t seed) {
  Random rng(seed);
  std::vector<float> x(size_t(M) * K);
  for (size_t i = 0; i < x.size(); ++i) x[i] = rng.normalish() * ((i % K) % 97 == 5 ? 10.0f : 1.0f);
  return x;
}

// N rows in the file's type (model/quant's encoder) and their dequantized values (its decoder).
struct Weights {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};
Weights weights(GgmlType type, int N, int K, uint64_t seed) {
  Random rng(seed);
  std::vector<float> w(size_t(N) * K);
  for (float& v : w) v = 0.02f * rng.normalish();
  const size_t row = quant::row_bytes(type, K);
  Weights out{std::vector<uint8_t>(row * N), std::vector<float>(w.size())};
  for (int n = 0; n < N; ++n) {
    quant::quantize_row(type, w.data() + size_t(n) * K, out.bytes.data() + n * row, K);
    quant::dequantize_row(type, out.bytes.data() + n * row, out.values.data() + size_t(n) * K, K);
  }
  return out;
}

// The activations as the kernels see them: model/quant's q8_0 (q8_K for K-quants) per row, values d * q exactly.
std::vector<double> quantized_activations(GgmlType type, const std::vector<float>& x, int M, int K) {
  std::vector<double> out(x.size());
  if (floats_in(type)) return std::vector<double>(x.begin(), x.end());
  for (int m = 0; m < M; ++m) {
    const float* row = x.data() + size_t(m) * K;
    if (k_quant(type)) {
      std::vector<quant::BlockQ8_K> blocks(K / 256);
      quant::quantize_row(GgmlType::Q8_K, row, blocks.data(), K);
      for (int k = 0; k < K; ++k) out[size_t(m) * K + k] = double(blocks[k / 256].d) * blocks[k / 256].qs[k % 256];
    } else {
      std::vector<quant::BlockQ8_0> blocks(K / 32);
      quant::quantize_row(GgmlType::Q8_0, row, blocks.data(), K);
      for (int k = 0; k < K; ++k) {  // ggml's quants, with the block scale amax / 127 kept in f32 (not fp16)
        float amax = 0;
        for (int j = k / 32 * 32; j < k / 32 * 32 + 32; ++j) amax = std::max(amax, std::fabs(row[j]));
        out[size_t(m) * K + k] = double(amax / 127.0f) * blocks[k / 32].qs[k % 32];
      }
    }
  }
  return out;
}

std::vector<float> run(QuantIsa isa, int threads, const std::vector<float>& x, const QuantMatrix& w, int M,
                       size_t row_offset = 0) {
  std::vector<float> out(size_t(M) * w.N);
  quant_matmul(isa, threads, x.data() + row_offset * w.K, w, out.data(), M);
  return out;
}

// Block scales set to powers of two (scales 2^-4, offsets and dmins 2^-5, at each layout's fp16 fields; f16/bf16:
// small integers), so that every product and sum of a short row is exact in float.
void power_of_two_scales(GgmlType type, std::vector<uint8_t>& bytes) {
  const quant::TypeTraits& traits = quant::traits(type);
  for (size_t b = 0; b < bytes.size() / traits.block_bytes; ++b) {
    uint8_t* block = bytes.data() + b * traits.block_bytes;
    const uint16_t d = quant::float_to_half(0.0625f), m = quant::float_to_half(0.03125f);
    if (type == GgmlType::Q6_K)
      std::memcpy(block + 208, &d, 2);
    else if (type == GgmlType::Q3_K)
      std::memcpy(block + 108, &d, 2);
    else if (type == GgmlType::MXFP4)
      block[0] = 124;  // 2^(124 - 128)
    else if (!floats_in(type))
      std::memcpy(block, &d, 2);
    if (type == GgmlType::Q4_1 || type == GgmlType::Q5_1 || type == GgmlType::Q4_K || type == GgmlType::Q5_K)
      std::memcpy(block + 2, &m, 2);
    if (floats_in(type)) {
      const uint16_t v = type == GgmlType::F16 ? quant::float_to_half(float(int(b % 7) - 3))
                                               : quant::float_to_bf16(float(int(b % 7) - 3));
      std::memcpy(block, &v, 2);
    }
  }
}

// Every quant of every block at its largest value (all bits set; q8_0: 127), scales and offsets left as they are.
void largest_quants(GgmlType type, std::vector<uint8_t>& bytes) {
  struct Quants {
    GgmlType type;
    int from, to;  // a block's quant bytes (ggml-common.h); the K-quants' 6-bit scales and mins too (63 each)
  };
  const Quants layouts[] = {{GgmlType::Q4_0, 2, 18},  {GgmlType::Q4_1, 4, 20},   {GgmlType::Q5_0, 2, 22},
                            {GgmlType::Q5_1, 4, 24},  {GgmlType::Q8_0, 2, 34},   {GgmlType::Q4_K, 4, 144},
                            {GgmlType::Q5_K, 4, 176}, {GgmlType::Q6_K, 0, 192},  {GgmlType::MXFP4, 1, 17},
                            {GgmlType::Q3_K, 0, 96},  {GgmlType::IQ4_XS, 8, 136}};
  const size_t block = quant::traits(type).block_bytes;
  for (const Quants& q : layouts)
    if (q.type == type)
      for (size_t b = 0; b < bytes.size() / block; ++b)
        std::fill(bytes.begin() + b * block + q.from, bytes.begin() + b * block + q.to,
                  type == GgmlType::Q8_0 ? 0x7f : 0xff);
}

}  // namespace

// (a) Float rounding only: the reference takes the same quantized activations in double precision, so the kernels
// may differ from it by the epilogue's roundings: at most (blocks + 2) * 2^-24 of the sum of |terms|, the classic
// bound of a sum of that many roundings (|w| counted with its block's largest |w|, for the offset terms; f16/bf16:
// one rounding per k). Measured: at most 17% of it. (b) Against the unquantized x the error adds at most
// sum |w| * |x - x_q|, the activations' own rounding; and an output row's relative error stays within 2.5% for
// q8_0 activations and 6% for q8_K's coarser 256-blocks (measured 1.6% and 4.0%, with a 10x outlier channel).
TEST_CASE("Each weight type's matmul matches the dequantized reference on awkward sizes, per ISA", "[qmatmul]") {
  const std::vector<QuantIsa> isas = runnable_isas();
  for (const TypeCase& tc : type_cases())
    for (int K : tc.ks)
      for (int N : kNs) {
        INFO(name_of(tc.type) << " K=" << K << " N=" << N);
        const Weights wt = weights(tc.type, N, K, 1000 + K + N);
        const QuantMatrix w = pack_quant_matrix(tc.type, wt.bytes.data(), N, K);
        const std::vector<float> x = activations(kMaxM, K, 7 * K + N);
        const std::vector<double> xq = quantized_activations(tc.type, x, kMaxM, K);
        const int block = panel_layout(tc.type).block;
        const double blocks = floats_in(tc.type) ? K : K / block;
        const double row_bound = floats_in(tc.type) ? 1e-5 : k_quant(tc.type) ? 0.06 : 0.025;
        std::vector<double> ref_q(size_t(kMaxM) * N), ref_f(ref_q.size()), tol_q(ref_q.size()), act_err(ref_q.size());
        for (int m = 0; m < kMaxM; ++m)
          for (int n = 0; n < N; ++n) {
            const float* wr = wt.values.data() + size_t(n) * K;
            double sq = 0, sf = 0, mag = 0, err = 0, block_max = 0;
            for (int k = 0; k < K; ++k) {
              if (k % block == 0) {
                block_max = 0;
                for (int j = k; j < k + block; ++j) block_max = std::max(block_max, double(std::fabs(wr[j])));
              }
              const double xf = x[size_t(m) * K + k], xk = xq[size_t(m) * K + k];
              sq += wr[k] * xk, sf += wr[k] * xf;
              mag += (std::fabs(wr[k]) + (floats_in(tc.type) ? 0 : block_max)) * std::fabs(xk);
              err += std::fabs(wr[k]) * std::fabs(xf - xk);
            }
            const size_t i = size_t(m) * N + n;
            ref_q[i] = sq, ref_f[i] = sf, tol_q[i] = (blocks + 2) * std::ldexp(mag, -24), act_err[i] = err;
          }
        for (QuantIsa isa : isas)
          for (int M : kMs) {
            INFO(quant_isa_name(isa) << " M=" << M);
            const std::vector<float> got = run(isa, 2, x, w, M);
            for (int m = 0; m < M; ++m) {
              double row_err = 0, row_norm = 0;
              for (int n = 0; n < N; ++n) {
                const size_t i = size_t(m) * N + n;
                INFO("m=" << m << " n=" << n << " got " << got[i] << " reference " << ref_q[i] << " f32 " << ref_f[i]);
                REQUIRE(std::fabs(got[i] - ref_q[i]) <= tol_q[i]);
                REQUIRE(std::fabs(got[i] - ref_f[i]) <= act_err[i] * 1.000001 + tol_q[i]);
                row_err += (got[i] - ref_f[i]) * (got[i] - ref_f[i]), row_norm += ref_f[i] * ref_f[i];
              }
              if (N >= 33) REQUIRE(std::sqrt(row_err) <= row_bound * std::sqrt(row_norm));
            }
          }
      }
}

// Power-of-two weight and activation scales make every product and partial sum exact in float, so any error in
// the integer dots (a quant, a scale index, an offset) shows as a different value, not as rounding.
TEST_CASE("Integer dots are exact: with power-of-two scales the result is the reference's exact value", "[qmatmul]") {
  const std::vector<QuantIsa> isas = runnable_isas();
  const int N = 33, M = 5;
  for (const TypeCase& tc : type_cases())
    for (int K : tc.ks) {
      INFO(name_of(tc.type) << " K=" << K);
      Weights wt = weights(tc.type, N, K, 77 + K);
      power_of_two_scales(tc.type, wt.bytes);
      for (int n = 0; n < N; ++n)
        quant::dequantize_row(tc.type, wt.bytes.data() + n * quant::row_bytes(tc.type, K),
                              wt.values.data() + size_t(n) * K, K);
      // Activations: integers times 2^-6, each block's first element +-127 so that its scale is exactly 2^-6.
      Random rng(K);
      std::vector<float> x(size_t(M) * K);
      for (int m = 0; m < M; ++m)
        for (int k = 0; k < K; ++k) {
          const float q = k % (k_quant(tc.type) ? 256 : 32) == 0 ? (rng.uniform() < 0 ? -127.0f : 127.0f)
                                                                 : std::round(rng.uniform() * 3.0f);
          x[size_t(m) * K + k] = q * 0.015625f;
        }
      const QuantMatrix w = pack_quant_matrix(tc.type, wt.bytes.data(), N, K);
      for (QuantIsa isa : isas) {
        const std::vector<float> got = run(isa, 2, x, w, M);
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            double exact = 0;
            for (int k = 0; k < K; ++k) exact += double(wt.values[size_t(n) * K + k]) * x[size_t(m) * K + k];
            INFO(quant_isa_name(isa) << " m=" << m << " n=" << n);
            REQUIRE(double(float(exact)) == exact);
            REQUIRE(got[size_t(m) * N + n] == float(exact));
          }
      }
    }
}

// The integer sums at their bounds: every quant at its largest value against activation rows whose quants are all
// -128, all 127 or both, so that a kernel whose int16 or int32 lanes could saturate or wrap gives a wrong value.
TEST_CASE("Integer sums at their bounds: the largest quants against activations of -128 and 127, on every ISA",
          "[qmatmul]") {
  const std::vector<QuantIsa> isas = runnable_isas();
  const int N = 9, M = 3;
  for (const TypeCase& tc : type_cases()) {
    if (floats_in(tc.type)) continue;
    const int K = tc.ks[1];
    INFO(name_of(tc.type) << " K=" << K);
    Weights wt = weights(tc.type, N, K, 5 + K);
    power_of_two_scales(tc.type, wt.bytes);
    largest_quants(tc.type, wt.bytes);
    for (int n = 0; n < N; ++n)
      quant::dequantize_row(tc.type, wt.bytes.data() + n * quant::row_bytes(tc.type, K),
                            wt.values.data() + size_t(n) * K, K);
    // Row 0: every x = a; row 1: every x = -a (quants all -128 or all 127); row 2: each block's first x = -a, the
    // rest a (q8_K: -128 beside 127).
    const int block = k_quant(tc.type) ? 256 : 32;
    const float a = 1.5f;
    std::vector<float> x(size_t(M) * K, a);
    for (int k = 0; k < K; ++k) x[size_t(K) + k] = -a, x[size_t(2) * K + k] = k % block == 0 ? -a : a;
    std::vector<double> xq = quantized_activations(tc.type, x, M, K);
    const QuantMatrix w = pack_quant_matrix(tc.type, wt.bytes.data(), N, K);
    const std::vector<float> scalar = run(QuantIsa::Generic, 1, x, w, M);
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {  // the scalar kernel: the exact value within the epilogue's float roundings
        double exact = 0, magnitude = 0;
        for (int k = 0; k < K; ++k) {
          exact += double(wt.values[size_t(n) * K + k]) * xq[size_t(m) * K + k];
          magnitude += std::fabs(double(wt.values[size_t(n) * K + k]) * xq[size_t(m) * K + k]);
        }
        INFO("m=" << m << " n=" << n);
        REQUIRE(std::fabs(scalar[size_t(m) * N + n] - exact) <= 1e-5 * magnitude);
      }
    for (QuantIsa isa : isas) {  // every SIMD kernel: the scalar kernel's bits
      INFO(quant_isa_name(isa));
      REQUIRE(run(isa, 1, x, w, M) == scalar);
    }
  }
}

// (c) The engine's contract: a row's bits never depend on its company, its position, the threads or the ISA.
TEST_CASE("A row's result is bit-identical alone, in batches of 3, 17, 40 and 64, on 1 to 3 threads, on every ISA",
          "[qmatmul]") {
  const std::vector<QuantIsa> isas = runnable_isas();
  for (const TypeCase& tc : type_cases()) {
    const int K = tc.ks[1], N = 100;
    INFO(name_of(tc.type) << " K=" << K);
    const Weights wt = weights(tc.type, N, K, 5 + K);
    const QuantMatrix w = pack_quant_matrix(tc.type, wt.bytes.data(), N, K);
    const std::vector<float> x = activations(kMaxM, K, 3 * K);
    const std::vector<float> generic_batch = run(QuantIsa::Generic, 2, x, w, kMaxM);
    for (QuantIsa isa : isas) {
      INFO(quant_isa_name(isa));
      std::vector<std::vector<float>> alone;
      for (int m = 0; m < kMaxM; ++m) alone.push_back(run(isa, 1, x, w, 1, m));
      for (int threads : {1, 2, 3})
        for (int batch : {3, 17, 40, 64})  // 40: two AMX row tiles and a part (q6_K's planes)
          for (int start = 0; start + batch <= kMaxM; start += batch) {
            const std::vector<float> got = run(isa, threads, x, w, batch, start);
            for (int r = 0; r < batch; ++r) {
              INFO("threads=" << threads << " batch=" << batch << " row " << start + r);
              REQUIRE(std::memcmp(got.data() + size_t(r) * N, alone[start + r].data(), N * sizeof(float)) == 0);
            }
          }
      for (int m = 0; m < kMaxM; ++m)
        REQUIRE(std::memcmp(alone[m].data(), generic_batch.data() + size_t(m) * N, N * sizeof(float)) == 0);
    }
    const std::vector<float> xs(x.begin(), x.begin() + size_t(3) * K);
    std::vector<float> via_backend(size_t(3) * N);
    CpuBackend(2).matmul(xs.data(), w, via_backend.data(), 3);
    REQUIRE(std::memcmp(via_backend.data(), generic_batch.data(), via_backend.size() * sizeof(float)) == 0);
  }
}

// f16/bf16 calls past 1 MiB of float rows go block by block of rows (64 at K = 4096): 150 rows are blocks of 64,
// 64 and 22, and each row's bits are still its own alone.
TEST_CASE("Float-weight rows taken in L2-sized blocks: each row's bits alone, on every ISA", "[qmatmul]") {
  const int K = 4096, N = 40, M = 150;
  for (GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
    INFO(name_of(type));
    const Weights wt = weights(type, N, K, 77);
    const QuantMatrix w = pack_quant_matrix(type, wt.bytes.data(), N, K);
    const std::vector<float> x = activations(M, K, 78);
    for (QuantIsa isa : runnable_isas()) {
      INFO(quant_isa_name(isa));
      const std::vector<float> batch = run(isa, 2, x, w, M);
      for (int m : {0, 63, 64, 127, 128, 149}) {
        INFO("row " << m);
        REQUIRE(std::memcmp(batch.data() + size_t(m) * N, run(isa, 1, x, w, 1, m).data(), N * sizeof(float)) == 0);
      }
    }
  }
}

// Rows whose scaled values fall exactly on halves: q8_0 rounds them away from zero (std::round) and q8_K to even
// (ggml's nearest_int), and every ISA's activation encoder must agree with the scalar one on each.
TEST_CASE("Activations on exact halves are rounded as the scalar encoders round them, on every ISA", "[qmatmul]") {
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_K}) {
    const int K = 256, N = 16, M = 2;
    std::vector<float> x(size_t(M) * K);
    for (int k = 0; k < K; ++k) {  // each block's largest magnitude is 127 (row 1: -127), so its scale is exactly 1
      const bool first = k % 32 == 0;
      x[k] = first ? 127.0f : 0.5f + float(k % 7) - (k % 2 ? 0.0f : 4.0f);
      x[K + k] = first ? -127.0f : -x[k];
    }
    const Weights wt = weights(type, N, K, 77);
    const QuantMatrix w = pack_quant_matrix(type, wt.bytes.data(), N, K);
    const std::vector<float> want = run(QuantIsa::Generic, 1, x, w, M);
    for (QuantIsa isa : runnable_isas()) {
      INFO(name_of(type) << " " << quant_isa_name(isa));
      REQUIRE(std::memcmp(run(isa, 1, x, w, M).data(), want.data(), want.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("The repacked matrix stays within 3% of the file's bytes (q3_K: 4%), in 64-byte aligned memory",
          "[qmatmul]") {
  for (const TypeCase& tc : type_cases()) {
    const int N = 64, K = tc.ks.back();
    const Weights wt = weights(tc.type, N, K, 9);
    const QuantMatrix w = pack_quant_matrix(tc.type, wt.bytes.data(), N, K);
    INFO(name_of(tc.type) << " packed " << w.bytes() << " file " << wt.bytes.size());
    REQUIRE(w.bytes() >= wt.bytes.size());
    const double bound = tc.type == GgmlType::Q3_K ? 1.04 : 1.03;  // q3_K: its 6-bit scales as bytes
    REQUIRE(double(w.bytes()) <= bound * double(wt.bytes.size()) + 64 * w.panels());
    REQUIRE(reinterpret_cast<uintptr_t>(w.data.data()) % 64 == 0);
    REQUIRE(w.panel_stride % 64 == 0);
  }
}

// A tied embedding reads its rows back from the head's packing, so every bit of every block must survive it.
TEST_CASE("Every row of a repacked matrix reads back as the file's bytes, quantized or random, in a part-full panel",
          "[qmatmul]") {
  for (const TypeCase& tc : type_cases()) {
    const int N = 13, K = tc.ks.back();
    Weights wt = weights(tc.type, N, K, 21);
    Random rng(5);
    std::vector<uint8_t> noise(wt.bytes.size());
    for (uint8_t& b : noise) b = static_cast<uint8_t>((rng.uniform() + 1.0f) * 128.0f);
    for (const std::vector<uint8_t>* file : {&wt.bytes, &noise})
      for (QuantIsa packed_for : {QuantIsa::Generic, QuantIsa::Avx512Vnni}) {  // q8_0: two's complement, biased
        const QuantMatrix w = pack_quant_matrix(tc.type, file->data(), N, K, packed_for);
        const size_t row = quant::row_bytes(tc.type, K);
        std::vector<uint8_t> back(row);
        for (int n = 0; n < N; ++n) {
          INFO(name_of(tc.type) << " packed for " << quant_isa_name(packed_for) << " row " << n
                                << (file == &noise ? " (random bytes)" : ""));
          quant_matrix_row(w, n, back.data());
          REQUIRE(std::memcmp(back.data(), file->data() + size_t(n) * row, row) == 0);
        }
      }
  }
}

// q8_0 is packed as w ^ 0x80 for the kernels that multiply by vpdpbusd (u8 x s8) and as the file's bytes for the
// rest; every kernel reads either pack, so a matrix packed for one ISA gives the scalar kernel's bits on any other.
// The largest quants (127, or -128 from random bytes) against activations of -128 and 127 catch a wrong correction.
TEST_CASE("A matrix packed for any ISA gives the same bits on every ISA, q8_0 biased or not", "[qmatmul]") {
  const QuantIsa all[] = {QuantIsa::Generic, QuantIsa::Avx2, QuantIsa::Avx512, QuantIsa::Avx512Vnni, QuantIsa::Amx};
  const std::vector<QuantIsa> isas = runnable_isas();
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::MXFP4, GgmlType::IQ4_XS, GgmlType::Q4_0}) {
    const int K = k_quant(type) ? 512 : 224, N = 33, M = 35;
    for (bool largest : {false, true}) {
      INFO(name_of(type) << (largest ? " largest quants" : " random quants"));
      Weights wt = weights(type, N, K, 3 + K);
      if (largest) largest_quants(type, wt.bytes);
      std::vector<float> x = activations(M, K, 11 * K);
      for (int k = 0; k < K; ++k) x[k] = 1.5f, x[size_t(K) + k] = -1.5f, x[size_t(2) * K + k] = k % 32 ? 1.5f : -1.5f;
      const std::vector<float> want =
          run(QuantIsa::Generic, 1, x, pack_quant_matrix(type, wt.bytes.data(), N, K, QuantIsa::Generic), M);
      for (QuantIsa packed_for : all) {
        const QuantMatrix w = pack_quant_matrix(type, wt.bytes.data(), N, K, packed_for);
        REQUIRE(w.biased ==
                (type == GgmlType::Q8_0 && (packed_for == QuantIsa::Avx512Vnni || packed_for == QuantIsa::Amx)));
        for (QuantIsa isa : isas) {
          INFO("packed for " << quant_isa_name(packed_for) << ", run on " << quant_isa_name(isa));
          REQUIRE(run(isa, 1, x, w, M) == want);
        }
      }
    }
  }
}

// (d) Refusals name the problem: the type, or the row length and the block it must be a multiple of.
TEST_CASE("Bad input: rows that are not whole blocks and types without a kernel are refused by name", "[qmatmul]") {
  const std::vector<uint8_t> bytes(1 << 16);
  CHECK(error_of([&] { pack_quant_matrix(GgmlType::Q4_K, bytes.data(), 4, 100); }) ==
        "pack_quant_matrix: q4_K rows of K=100 elements are not whole blocks of 256");
  CHECK(error_of([&] { pack_quant_matrix(GgmlType::Q4_0, bytes.data(), 4, 48); }) ==
        "pack_quant_matrix: q4_0 rows of K=48 elements are not whole blocks of 32");
  CHECK(error_of([&] { pack_quant_matrix(GgmlType::Q8_0, bytes.data(), 0, 32); }) ==
        "pack_quant_matrix: a q8_0 matrix needs N > 0 and K > 0, got N=0 K=32");
  const std::string supported =
      " (supported: q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q5_K, q6_K, f16, bf16, mxfp4, q3_K, iq4_xs)";
  CHECK(error_of([&] { pack_quant_matrix(GgmlType::Q8_K, bytes.data(), 4, 256); }) ==
        "quantized matmul: no kernel for ggml type q8_K" + supported);
  CHECK(error_of([&] { pack_quant_matrix(GgmlType::F32, bytes.data(), 4, 32); }) ==
        "quantized matmul: no kernel for ggml type f32" + supported);
  CHECK(error_of([&] { pack_quant_matrix(static_cast<GgmlType>(10), bytes.data(), 4, 256); }) ==
        "quantized matmul: no kernel for ggml type q2_K" + supported);
  const std::vector<float> x(64, 1.0f);
  std::vector<float> out(64);
  CHECK(error_of([&] { quant_matmul(QuantIsa::Generic, 1, x.data(), QuantMatrix{}, out.data(), 1); }) ==
        "quant_matmul: the matrix is empty or of an unsupported type f32");
}
