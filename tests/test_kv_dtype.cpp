// --kv-cache-dtype: the F16 and BF16 conversions bit for bit, attention over 16-bit KV against the scalar
// reference per ISA, batch invariance with 16-bit KV, and how far 16-bit KV moves a real model's logprobs.
#include <immintrin.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/reference.hpp"
#include "tests/kernel_inputs.hpp"
#include "kernels/cuda/kv_write.hpp"
#include "kernels/cuda/paged_attention.hpp"
#include "model/kv_cache.hpp"
#include "tests/test_support.hpp"

using namespace parley;
using namespace parley::cpu;

namespace {

float from_bits(uint32_t x) { return bits_float(x); }

__attribute__((target("f16c"))) uint16_t f16c_round(float f) {
  return uint16_t(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}
__attribute__((target("f16c"))) float f16c_widen(uint16_t h) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

using test::random_vec;
using test::supported_isas;

// Every 251st float bit pattern (17 million, every exponent and sign), plus the edges of the F16 range.
std::vector<float> float_sweep() {
  std::vector<float> out;
  for (uint64_t x = 0; x < (uint64_t(1) << 32); x += 251) out.push_back(from_bits(uint32_t(x)));
  for (uint32_t x :
       {0x477fe000u, 0x477fefffu, 0x477ff000u, 0x33000000u, 0x33000001u, 0x387fe000u, 0x387ff000u, 0x7f800000u})
    out.push_back(from_bits(x)), out.push_back(-from_bits(x));
  return out;
}

}  // namespace

TEST_CASE("f32 to f16 rounds to nearest even: known values", "[kv_dtype]") {
  REQUIRE(f32_to_f16(1.0f) == 0x3c00);
  REQUIRE(f32_to_f16(-2.0f) == 0xc000);
  REQUIRE(f32_to_f16(65504.0f) == 0x7bff);                    // the largest half
  REQUIRE(f32_to_f16(65519.99f) == 0x7bff);                   // just under the midpoint to 65536
  REQUIRE(f32_to_f16(65520.0f) == 0x7c00);                    // the midpoint rounds to even: infinity
  REQUIRE(f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);             // a tie rounds down to the even mantissa
  REQUIRE(f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02);         // a tie rounds up to the even mantissa
  REQUIRE(f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);  // past the tie: up (truncation gives 0x3c00)
  REQUIRE(f32_to_f16(0x1p-24f) == 0x0001);                    // the smallest subnormal
  REQUIRE(f32_to_f16(0x1p-25f) == 0x0000);                    // half of it: a tie, to zero
  REQUIRE(f32_to_f16(0x1.8p-25f) == 0x0001);
  REQUIRE(f32_to_f16(-0.0f) == 0x8000);
  REQUIRE(f32_to_f16(INFINITY) == 0x7c00);
  REQUIRE((f32_to_f16(NAN) & 0x7e00) == 0x7e00);  // a quiet NaN
  REQUIRE(f16_to_f32(0x3555) == 0x1.554p-2f);
  REQUIRE(f16_to_f32(0x0001) == 0x1p-24f);
  REQUIRE(f16_to_f32(0x03ff) == 0x1.ff8p-15f);
}

TEST_CASE("f32 to bf16 rounds to nearest even: known values", "[kv_dtype]") {
  REQUIRE(f32_to_bf16(1.0f) == 0x3f80);
  REQUIRE(f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);         // a tie, to even
  REQUIRE(f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);     // a tie, to even (up)
  REQUIRE(f32_to_bf16(from_bits(0x3f808001)) == 0x3f81);  // past the tie (truncation gives 0x3f80)
  REQUIRE(f32_to_bf16(from_bits(0x7f7fffff)) == 0x7f80);  // the largest float rounds to infinity
  REQUIRE(f32_to_bf16(-0.0f) == 0x8000);
  REQUIRE((f32_to_bf16(NAN) & 0x7fc0) == 0x7fc0);
  REQUIRE(bf16_to_f32(0xc0a0) == -5.0f);
}

TEST_CASE("software f16 rounding and widening equal F16C bit for bit", "[kv_dtype]") {
  if (!__builtin_cpu_supports("f16c")) {
    WARN("no F16C on this CPU: nothing to compare with");
    return;
  }
  const std::vector<float> sweep = float_sweep();
  size_t mismatches = 0;
  for (float f : sweep) mismatches += f32_to_f16(f) != f16c_round(f);
  REQUIRE(mismatches == 0);
  for (uint32_t h = 0; h < 65536; ++h) {
    const float a = f16_to_f32(uint16_t(h)), b = f16c_widen(uint16_t(h));
    REQUIRE(float_bits(a) == float_bits(b));
  }
  for (Isa isa : supported_isas()) {  // each ISA's vectorized kv_write rounding
    INFO("isa " << isa_name(isa));
    std::vector<uint16_t> got(sweep.size());
    CpuBackend(1, isa).simd().to_f16(sweep.data(), got.data(), int(sweep.size()));
    mismatches = 0;
    for (size_t i = 0; i < sweep.size(); ++i) mismatches += got[i] != f32_to_f16(sweep[i]);
    REQUIRE(mismatches == 0);
  }
}

TEST_CASE("kv_write stores each dtype's rounding, on the CPU and in the CUDA body", "[kv_dtype]") {
  const int kv_dim = 5, M = 3;
  const auto k = random_vec(M * kv_dim, 1, 3.0f), v = random_vec(M * kv_dim, 2, 3.0f);
  const std::vector<int64_t> slots{7, 0, 3};
  for (KvDtype d : {KvDtype::F16, KvDtype::Bf16}) {
    std::vector<uint16_t> keys(8 * kv_dim), values(8 * kv_dim), ck(8 * kv_dim), cv(8 * kv_dim);
    CpuBackend(1).kv_write({keys.data(), values.data(), 4, kv_dim, d}, k.data(), v.data(), slots.data(), M);
    with_kv_dtype(d, [&](auto dt) {
      for (int64_t i = 0; i < M * kv_dim; ++i)
        cuda::body::kv_write_at<decltype(dt)::value>(ck.data(), cv.data(), kv_dim, k.data(), v.data(), slots.data(), i);
    });
    for (int m = 0; m < M; ++m)
      for (int j = 0; j < kv_dim; ++j) {
        const size_t at = size_t(slots[m]) * kv_dim + j;
        const float kf = k[m * kv_dim + j], vf = v[m * kv_dim + j];
        REQUIRE(keys[at] == (d == KvDtype::F16 ? f32_to_f16(kf) : f32_to_bf16(kf)));
        REQUIRE(values[at] == (d == KvDtype::F16 ? f32_to_f16(vf) : f32_to_bf16(vf)));
        REQUIRE(ck[at] == keys[at]);
        REQUIRE(cv[at] == values[at]);
      }
  }
}

TEST_CASE("attention over f16 and bf16 KV equals the scalar reference per ISA and the CUDA body", "[kv_dtype]") {
  for (KvDtype d : {KvDtype::F16, KvDtype::Bf16})
    for (int head_dim : {3, 8, 17, 64}) {
      const int n_heads = 4, n_kv_heads = 2, kv_dim = n_kv_heads * head_dim, block_size = 16, num_blocks = 8;
      const auto kf = random_vec(size_t(num_blocks) * block_size * kv_dim, 11 + head_dim, 2.0f);
      const auto vf = random_vec(kf.size(), 12 + head_dim);
      std::vector<uint16_t> keys(kf.size()), values(kf.size());
      std::vector<float> wide_k(kf.size()), wide_v(kf.size());  // the stored values widened: the F32 oracle
      for (size_t i = 0; i < kf.size(); ++i) {
        keys[i] = d == KvDtype::F16 ? f32_to_f16(kf[i]) : f32_to_bf16(kf[i]);
        values[i] = d == KvDtype::F16 ? f32_to_f16(vf[i]) : f32_to_bf16(vf[i]);
        wide_k[i] = d == KvDtype::F16 ? f16_to_f32(keys[i]) : bf16_to_f32(keys[i]);
        wide_v[i] = d == KvDtype::F16 ? f16_to_f32(values[i]) : bf16_to_f32(values[i]);
      }
      const KvLayerView kv{keys.data(), values.data(), block_size, kv_dim, d},
          wide{wide_k.data(), wide_v.data(), block_size, kv_dim};
      std::vector<int> tables{7, 2, 5, 0, 3, 6, 1, 4}, positions{0, 15, 16, 100, 127}, token_seq(5, 0);
      AttentionMetadata meta{5, positions.data(), token_seq.data(), tables.data(), num_blocks};
      const auto q = random_vec(positions.size() * n_heads * head_dim, 13);
      std::vector<float> want(q.size()), oracle(q.size()), got(q.size());
      reference::paged_attention(q.data(), kv, meta, n_heads, n_kv_heads, head_dim, want.data());
      reference::paged_attention(q.data(), wide, meta, n_heads, n_kv_heads, head_dim, oracle.data());
      INFO("dtype " << kv_dtype_name(d) << " head_dim " << head_dim);
      REQUIRE(std::memcmp(want.data(), oracle.data(), want.size() * 4) == 0);  // the reference reads what was stored
      for (Isa isa : supported_isas()) {
        INFO("isa " << isa_name(isa));
        CpuBackend(2, isa).paged_attention(q.data(), kv, meta, n_heads, n_kv_heads, head_dim, got.data());
        for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).margin(2e-5));
        std::vector<float> f32_got(q.size());  // the same ISA over the widened F32 copy: the same bits
        CpuBackend(2, isa).paged_attention(q.data(), wide, meta, n_heads, n_kv_heads, head_dim, f32_got.data());
        REQUIRE(std::memcmp(got.data(), f32_got.data(), got.size() * 4) == 0);
        // Each token alone, as a decode step sees it (whole vectors: the rows widened where they lie, not staged).
        const size_t width = size_t(n_heads) * head_dim;
        for (size_t t = 0; t < positions.size(); ++t) {
          std::vector<float> alone(width);
          const AttentionMetadata one{1, &positions[t], &token_seq[t], tables.data(), num_blocks};
          CpuBackend(1, isa).paged_attention(q.data() + t * width, kv, one, n_heads, n_kv_heads, head_dim,
                                             alone.data());
          INFO("token " << t << " alone");
          REQUIRE(std::memcmp(alone.data(), got.data() + t * width, width * 4) == 0);
        }
      }
      // The CUDA split body over the stored KV against the same body over the widened copy, bit for bit.
      namespace body = cuda::body;
      const body::AttentionRows rows{positions.data(), token_seq.data(), tables.data(), num_blocks};
      const int splits = 2;
      std::vector<float> acc(5 * n_heads * splits * head_dim), mx(5 * n_heads * splits), sm(mx.size());
      std::vector<float> acc2 = acc, mx2 = mx, sm2 = sm;
      const body::AttentionPartials p1{acc.data(), mx.data(), sm.data(), 64, splits},
          p2{acc2.data(), mx2.data(), sm2.data(), 64, splits};
      with_kv_dtype(d, [&](auto dt) {
        using T = typename KvElem<decltype(dt)::value>::T;
        const body::PagedKv<decltype(dt)::value> pk{kv.keys_as<const T>(), kv.values_as<const T>(), block_size, kv_dim};
        const body::PagedKv<KvDtype::F32> pw{wide_k.data(), wide_v.data(), block_size, kv_dim};
        for (int64_t i = 0; i < int64_t(mx.size()); ++i) {
          body::attention_split_at<64, decltype(dt)::value>(q.data(), pk, rows, n_heads, n_kv_heads, head_dim, p1, 0, i,
                                                            {});
          body::attention_split_at<64, KvDtype::F32>(q.data(), pw, rows, n_heads, n_kv_heads, head_dim, p2, 0, i, {});
        }
      });
      REQUIRE(std::memcmp(acc.data(), acc2.data(), acc.size() * 4) == 0);
    }
}
