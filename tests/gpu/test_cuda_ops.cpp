// Every CUDA op against the CPU reference on random inputs (llama.cpp's test-backend-ops): F32 ops within float
// rounding of the reference, the GEMM within the bounds of its weight type. Not yet run on a GPU.
#define CATCH_CONFIG_EXTERNAL_INTERFACES  // the listener below
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "engine/sampler.hpp"
#include "kernels/cpu/reference.hpp"
#include "model/cuda/cuda_model.hpp"
#include "kernels/cuda/ops.hpp"
#include "test_support.hpp"

using namespace parley;
using cuda::CudaBackend;
using cuda::DeviceBuffer;

namespace {

// Without a CUDA device the suite prints why and exits 77, which ctest reports as skipped.
struct SkipWithoutDevice : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testRunStarting(const Catch::TestRunInfo&) override {
    std::string why;
    if (cuda::device_count(&why) > 0) return;
    std::printf("skipped: the GPU tests need a CUDA device (%s)\n", why.c_str());
    std::fflush(stdout);
    std::exit(77);
  }
};
CATCH_REGISTER_LISTENER(SkipWithoutDevice)

template <class T>
DeviceBuffer to_device(const std::vector<T>& v) {
  DeviceBuffer b(v.size() * sizeof(T));
  PARLEY_CUDA_CHECK(cudaMemcpy(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  PARLEY_CUDA_CHECK(
      cudaDeviceSynchronize());  // the legacy stream's copy may still be landing; the kernels run on another
  return b;
}

template <class T>
std::vector<T> to_host(const DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  PARLEY_CUDA_CHECK(cudaDeviceSynchronize());
  PARLEY_CUDA_CHECK(cudaMemcpy(v.data(), b.get(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

// max |got - want| / max(|want|, floor), over every value.
double max_rel_error(const std::vector<float>& got, const std::vector<float>& want, double floor = 1e-2) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    REQUIRE(std::isfinite(got[i]));
    worst = std::max(worst, std::abs(double(got[i]) - want[i]) / std::max(floor, std::abs(double(want[i]))));
  }
  return worst;
}

}  // namespace

TEST_CASE("CUDA elementwise and row ops equal the CPU reference", "[gpu]") {
  CudaBackend be;
  const int M = 37, dim = 768;
  const auto x = test::random_floats(size_t(M) * dim, 1), w = test::random_floats(dim, 2),
             up = test::random_floats(x.size(), 3);
  auto dx = to_device(x), dw = to_device(w), dup = to_device(up);
  DeviceBuffer dout(x.size() * 4);
  std::vector<float> want(x.size());

  be.rmsnorm(dx.get<float>(), dw.get<float>(), dout.get<float>(), M, dim, 1e-5f);
  cpu::reference::rmsnorm(x.data(), w.data(), want.data(), M, dim, 1e-5f);
  CHECK(max_rel_error(to_host<float>(dout, x.size()), want) < 1e-5);

  be.swiglu(dx.get<float>(), dup.get<float>(), dout.get<float>(), int64_t(x.size()));
  cpu::reference::swiglu(x.data(), up.data(), want.data(), int64_t(x.size()));
  CHECK(max_rel_error(to_host<float>(dout, x.size()), want) < 1e-5);

  std::vector<int> positions(M);
  for (int m = 0; m < M; ++m) positions[size_t(m)] = m * 53;
  auto dpos = to_device(positions);
  for (RopeLayout layout : {RopeLayout::Adjacent, RopeLayout::NeoX}) {
    auto dr = to_device(x);
    be.rope(dr.get<float>(), dpos.get<int>(), M, 12, 64, 10000.0f, layout);
    want = x;
    cpu::reference::rope(want.data(), positions.data(), M, 12, 64, 10000.0f, layout);
    CHECK(max_rel_error(to_host<float>(dr, x.size()), want) < 1e-4);  // device sinf/cosf/powf: a few ulp
  }

  const auto table = test::random_floats(512 * size_t(dim), 4);
  std::vector<int> tokens(M);
  for (int m = 0; m < M; ++m) tokens[size_t(m)] = (m * 97) % 512;
  auto dtable = to_device(table), dtokens = to_device(tokens);
  be.embedding(dtable.get<float>(), dtokens.get<int>(), M, dim, dout.get<float>());
  cpu::reference::embedding(table.data(), tokens.data(), M, dim, want.data());
  REQUIRE(to_host<float>(dout, x.size()) == want);

  auto dy = to_device(x);
  be.add(dy.get<float>(), dup.get<float>(), int64_t(x.size()));
  const auto sum = to_host<float>(dy, x.size());
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(sum[i] == x[i] + up[i]);

  const std::vector<int> rows{36, 0, 5};
  auto drows = to_device(rows);
  DeviceBuffer dg(3 * size_t(dim) * 4);
  be.gather_rows(dx.get<float>(), drows.get<int>(), 3, dim, dg.get<float>());
  const auto g = to_host<float>(dg, 3 * size_t(dim));
  for (int s = 0; s < 3; ++s)
    REQUIRE(std::equal(g.begin() + s * dim, g.begin() + (s + 1) * dim, x.begin() + rows[size_t(s)] * dim));
}

TEST_CASE("CUDA ops of the architectures (RoPE scaling, GeGLU, biases, scales, soft-capping) equal the CPU reference",
          "[gpu]") {
  CudaBackend be;
  const int M = 37, heads = 12, hd = 64, dim = heads * hd;
  const auto x = test::random_floats(size_t(M) * dim, 1), up = test::random_floats(x.size(), 3, 4.0f),
             bias = test::random_floats(dim, 5);
  auto dx = to_device(x), dup = to_device(up), dbias = to_device(bias);
  DeviceBuffer dout(x.size() * 4);
  std::vector<float> want(x.size());
  be.geglu(dx.get<float>(), dup.get<float>(), dout.get<float>(), int64_t(x.size()));
  cpu::reference::geglu(x.data(), up.data(), want.data(), int64_t(x.size()));
  CHECK(max_rel_error(to_host<float>(dout, x.size()), want) < 1e-5);

  auto dy = to_device(up);
  be.softcap(dy.get<float>(), 1.5f, int64_t(up.size()));
  for (size_t i = 0; i < up.size(); ++i) want[i] = cpu::reference::softcap(up[i], 1.5f);
  CHECK(max_rel_error(to_host<float>(dy, up.size()), want) < 1e-5);
  dy = to_device(x);
  be.scale(dy.get<float>(), 27.7128f, int64_t(x.size()));
  const auto scaled = to_host<float>(dy, x.size());
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(scaled[i] == x[i] * 27.7128f);
  dy = to_device(x);
  be.add_bias(dy.get<float>(), dbias.get<float>(), M, dim);
  const auto biased = to_host<float>(dy, x.size());
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(biased[i] == x[i] + bias[i % size_t(dim)]);

  std::vector<int> positions(M);
  for (int m = 0; m < M; ++m) positions[size_t(m)] = m * 53;
  std::vector<float> factors(16);
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 0.25f * float(i);
  auto dpos = to_device(positions), dfactors = to_device(factors);
  for (RopeLayout layout : {RopeLayout::Adjacent, RopeLayout::NeoX}) {
    auto dr = to_device(x);
    be.rope(dr.get<float>(), dpos.get<int>(), M, heads, hd,
            cpu::RopeSpec{500000.0f, layout, 32, 0.25f, 1.2f, dfactors.get<float>()});
    want = x;
    cpu::reference::rope(want.data(), positions.data(), M, heads, hd,
                         cpu::RopeSpec{500000.0f, layout, 32, 0.25f, 1.2f, factors.data()});
    CHECK(max_rel_error(to_host<float>(dr, x.size()), want) < 1e-4);  // device sinf/cosf/powf: a few ulp
  }
}

TEST_CASE("CUDA GEMM through cuBLAS is within its weight type's bounds of the CPU reference and batch-invariant",
          "[gpu]") {
  CudaBackend be;
  const int N = 2048, K = 768, max_m = 130;
  const auto w = test::random_floats(size_t(N) * K, 5, 1.0f / std::sqrt(float(K)));
  const auto x = test::random_floats(size_t(max_m) * K, 6);
  std::vector<float> want(size_t(max_m) * N);
  cpu::reference::matmul(x.data(), w.data(), want.data(), max_m, N, K);
  auto dx = to_device(x);
  DeviceBuffer dout(want.size() * 4);
  be.reserve_matmul(max_m, K, N);
  for (auto [dtype, bound] : {std::pair{cuda::DType::F32, 1e-4}, {cuda::DType::F16, 1e-2}, {cuda::DType::BF16, 5e-2}}) {
    const cuda::DeviceMatrix dw = be.upload_matrix(w.data(), N, K, dtype);
    be.matmul(dx.get<float>(), dw, dout.get<float>(), max_m);
    const auto all = to_host<float>(dout, want.size());
    INFO("dtype " << cuda::dtype_name(dtype));
    CHECK(max_rel_error(all, want, 0.1) < bound);
    for (int M : {1, 7, 64, 65}) {  // each row's bits whatever the batch size (chunks of kGemmRows)
      INFO("M " << M);
      be.matmul(dx.get<float>(), dw, dout.get<float>(), M);
      const auto some = to_host<float>(dout, size_t(M) * N);
      REQUIRE(std::equal(some.begin(), some.end(), all.begin()));
    }
  }
}

TEST_CASE("CUDA KV write and paged attention equal the CPU reference on a mixed batch", "[gpu]") {
  CudaBackend be;
  const int n_heads = 8, n_kv_heads = 2, head_dim = 64, block_size = 16, num_blocks = 40,
            kv_dim = n_kv_heads * head_dim;
  // Sequence 0 prefills 0..99, sequence 1 decodes at 300, sequence 2 verifies 3 tokens at 47..49.
  std::vector<int> positions, token_seq;
  for (int p = 0; p < 100; ++p) positions.push_back(p), token_seq.push_back(0);
  positions.push_back(300), token_seq.push_back(1);
  for (int p = 47; p < 50; ++p) positions.push_back(p), token_seq.push_back(2);
  const int T = int(positions.size()), max_blocks = 20;
  std::vector<int> tables(3 * max_blocks, 0);
  std::mt19937 rng(3);
  std::vector<int> perm(num_blocks);
  for (int i = 0; i < num_blocks; ++i) perm[size_t(i)] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  for (int i = 0; i < 7; ++i) tables[size_t(i)] = perm[size_t(i)];
  for (int i = 0; i < 19; ++i) tables[size_t(max_blocks + i)] = perm[size_t(7 + i)];
  for (int i = 0; i < 4; ++i) tables[size_t(2 * max_blocks + i)] = perm[size_t(26 + i)];
  auto keys = test::random_floats(size_t(num_blocks) * block_size * kv_dim, 7),
       values = test::random_floats(keys.size(), 8);
  // This step's own K/V rows go through kv_write on both sides.
  const auto k = test::random_floats(size_t(T) * kv_dim, 9), v = test::random_floats(size_t(T) * kv_dim, 10);
  std::vector<int64_t> slots;
  for (int t = 0; t < T; ++t) {
    const int* table = tables.data() + token_seq[size_t(t)] * max_blocks;
    slots.push_back(int64_t(table[positions[size_t(t)] / block_size]) * block_size + positions[size_t(t)] % block_size);
  }
  auto dkeys = to_device(keys), dvalues = to_device(values), dk = to_device(k), dv = to_device(v),
       dslots = to_device(slots);
  const cpu::KvLayerView dkv{dkeys.get<float>(), dvalues.get<float>(), block_size, kv_dim};
  const cpu::KvLayerView hkv{keys.data(), values.data(), block_size, kv_dim};
  be.kv_write(dkv, dk.get<float>(), dv.get<float>(), dslots.get<int64_t>(), T);
  cpu::reference::kv_write(hkv, k.data(), v.data(), slots.data(), T);
  REQUIRE(to_host<float>(dkeys, keys.size()) == keys);
  REQUIRE(to_host<float>(dvalues, values.size()) == values);

  const auto q = test::random_floats(size_t(T) * n_heads * head_dim, 11);
  auto dq = to_device(q), dpos = to_device(positions), dseq = to_device(token_seq), dtables = to_device(tables);
  DeviceBuffer dout(q.size() * 4);
  const cpu::AttentionMetadata dmeta{T, dpos.get<int>(), dseq.get<int>(), dtables.get<int>(), max_blocks};
  const cpu::AttentionMetadata hmeta{T, positions.data(), token_seq.data(), tables.data(), max_blocks};
  be.reserve_attention(T, n_heads, head_dim, max_blocks * block_size);
  be.paged_attention(dq.get<float>(), dkv, dmeta, n_heads, n_kv_heads, head_dim, dout.get<float>());
  std::vector<float> want(q.size());
  cpu::reference::paged_attention(q.data(), hkv, hmeta, n_heads, n_kv_heads, head_dim, want.data());
  const std::vector<float> got = to_host<float>(dout, q.size());
  CHECK(max_rel_error(got, want) < 1e-4);
  // The decode token (position 300: 5 splits) alone gives the same bits as inside the batch.
  const std::vector<int> pos{300}, seq{0};
  const std::vector<int> table1(tables.begin() + max_blocks, tables.begin() + 2 * max_blocks);
  auto dpos1 = to_device(pos), dseq1 = to_device(seq), dtable1 = to_device(table1);
  const cpu::AttentionMetadata alone{1, dpos1.get<int>(), dseq1.get<int>(), dtable1.get<int>(), max_blocks};
  DeviceBuffer dout1(size_t(n_heads) * head_dim * 4);
  be.paged_attention(dq.get<float>() + size_t(100) * n_heads * head_dim, dkv, alone, n_heads, n_kv_heads, head_dim,
                     dout1.get<float>());
  const std::vector<float> one = to_host<float>(dout1, size_t(n_heads) * head_dim);
  REQUIRE(std::equal(one.begin(), one.end(), got.begin() + size_t(100) * n_heads * head_dim));

  // The architectures' scores: a window of 100 (the decode at 300 skips its first splits), soft-capping, a query scale.
  for (const cpu::AttentionSpec spec : {cpu::AttentionSpec{0.0f, 0.0f, 100}, cpu::AttentionSpec{0.2f, 5.0f, 24}}) {
    CAPTURE(spec.scale, spec.softcap, spec.window);
    be.paged_attention(dq.get<float>(), dkv, dmeta, n_heads, n_kv_heads, head_dim, dout.get<float>(), spec);
    cpu::reference::paged_attention(q.data(), hkv, hmeta, n_heads, n_kv_heads, head_dim, want.data(), spec);
    CHECK(max_rel_error(to_host<float>(dout, q.size()), want) < 1e-4);
  }
}

TEST_CASE("CUDA sampling draws the CPU sampler's tokens and exact verification counts the drafts that stand", "[gpu]") {
  CudaBackend be;
  const int vocab = 32000, rows = 64;
  const auto logits = test::random_floats(size_t(rows) * vocab, 12, 3.0f);
  std::vector<cuda::body::SampleParams> params;
  for (int r = 0; r < rows; ++r)
    params.push_back({r % 4 == 0 ? 0.0f : 0.8f, r % 3 == 0 ? 0.05f : 0.0f, 500 + uint64_t(r), r * 11});
  auto dlogits = to_device(logits), dparams = to_device(params);
  DeviceBuffer dtokens(rows * 4);
  be.sample(dlogits.get<float>(), vocab, dparams.get<cuda::body::SampleParams>(), rows, dtokens.get<int>());
  const auto got = to_host<int>(dtokens, rows);
  Sampler sampler;
  int equal = 0;
  for (int r = 0; r < rows; ++r) {
    SamplingParams p;
    p.temperature = params[size_t(r)].temperature, p.min_p = params[size_t(r)].min_p;
    const int want =
        sampler.sample(logits.data() + size_t(r) * vocab, vocab, p, params[size_t(r)].seed, params[size_t(r)].position);
    if (p.temperature == 0.0f) REQUIRE(got[size_t(r)] == want);  // argmax: exact
    equal += got[size_t(r)] == want;
  }
  CHECK(equal >= rows - 2);  // device expf may move a draw sitting on a CDF boundary

  const std::vector<int> sampled{5, 6, 7, 8, 5, 9, 7, 8}, drafts{5, 6, 7, 5, 6, 7};
  auto ds = to_device(sampled), dd = to_device(drafts);
  DeviceBuffer dacc(2 * 4);
  be.verify_exact(ds.get<int>(), dd.get<int>(), 3, 2, dacc.get<int>());
  REQUIRE(to_host<int>(dacc, 2) == std::vector<int>{3, 1});
}
