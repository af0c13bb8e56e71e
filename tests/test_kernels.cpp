// Every CPU kernel against the scalar reference on awkward sizes, per supported ISA (test-backend-ops style),
// plus the batch-invariance property the engine relies on: a row's bits never depend on its company.
#include <catch2/catch.hpp>

#include <algorithm>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/reference.hpp"
#include "kernels/cpu/weight_buffer.hpp"
#include "tests/kernel_inputs.hpp"
#include "model/kv_cache.hpp"

using namespace parley;
using namespace parley::cpu;

namespace {

using test::random_vec;
using test::supported_isas;

// |a-b| within a relative bound scaled by the sum of |terms|, the error budget of a reordered sum.
void require_close(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& mag,
                   float rel = 1e-5f) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("index " << i << " got " << got[i] << " want " << want[i]);
    REQUIRE(std::fabs(got[i] - want[i]) <= rel * (mag[i] + 1e-6f));
  }
}

}  // namespace

TEST_CASE("matmul matches the scalar reference on awkward sizes", "[kernels]") {
  for (Isa isa : supported_isas()) {
    CpuBackend backend(2, isa);
    for (int M : {1, 3, 17, 64, 100})
      for (int N : {1, 3, 17, 64, 100})
        for (int K : {1, 7, 17, 64, 100}) {
          auto x = random_vec(size_t(M) * K, M * 131 + K);
          auto w = random_vec(size_t(N) * K, N * 7 + K * 3);
          std::vector<float> got(size_t(M) * N), want(size_t(M) * N), mag(size_t(M) * N);
          backend.matmul(x.data(), pack_matrix(w.data(), N, K), got.data(), M);
          reference::matmul(x.data(), w.data(), want.data(), M, N, K);
          for (int m = 0; m < M; ++m)
            for (int n = 0; n < N; ++n)
              for (int k = 0; k < K; ++k)
                mag[size_t(m) * N + n] += std::fabs(x[size_t(m) * K + k] * w[size_t(n) * K + k]);
          INFO("isa " << isa_name(isa) << " M " << M << " N " << N << " K " << K);
          require_close(got, want, mag);
        }
  }
}

TEST_CASE("matmul rows are bit-identical whatever the batch and thread count", "[kernels][invariance]") {
  const int K = 300, N = 257;
  auto w_rows = random_vec(size_t(N) * K, 5);
  const PackedMatrix w = pack_matrix(w_rows.data(), N, K);
  auto x = random_vec(size_t(37) * K, 6);
  for (Isa isa : supported_isas()) {
    std::vector<float> full(size_t(37) * N);
    CpuBackend(2, isa).matmul(x.data(), w, full.data(), 37);
    for (int threads : {1, 2, 3}) {
      CpuBackend backend(threads, isa);
      for (int row : {0, 5, 36}) {
        std::vector<float> alone(N);
        backend.matmul(x.data() + size_t(row) * K, w, alone.data(), 1);
        INFO("isa " << isa_name(isa) << " threads " << threads << " row " << row);
        REQUIRE(std::memcmp(alone.data(), full.data() + size_t(row) * N, sizeof(float) * N) == 0);
      }
    }
  }
}

TEST_CASE("elementwise kernels match the reference", "[kernels]") {
  CpuBackend backend(2);
  for (int dim : {1, 3, 17, 64, 100}) {
    const int M = 5;
    auto x = random_vec(size_t(M) * dim, dim);
    auto wt = random_vec(dim, dim + 1);
    std::vector<float> got(x.size()), want(x.size());
    backend.rmsnorm(x.data(), wt.data(), got.data(), M, dim, 1e-5f);
    reference::rmsnorm(x.data(), wt.data(), want.data(), M, dim, 1e-5f);
    REQUIRE(got == want);
    // rmsnorm of a row of 2s with unit weight is 1 (up to eps)
    std::vector<float> twos(dim, 2.0f), ones(dim, 1.0f), y(dim);
    backend.rmsnorm(twos.data(), ones.data(), y.data(), 1, dim, 0.0f);
    for (float v : y) REQUIRE(v == Approx(1.0f).epsilon(1e-6));
  }
  for (Isa isa : supported_isas())
    for (int M : {1, 3, 64}) {  // 64 rows of 300: enough work to split the rows across both threads
      const int hidden = M == 1 ? 17 : 300;
      auto gate_up = random_vec(size_t(M) * 2 * hidden, M, M == 3 ? 100.0f : 4.0f);  // 100: exp's range ends
      std::vector<float> got(size_t(M) * hidden);
      CpuBackend(2, isa).swiglu_rows(gate_up.data(), got.data(), M, hidden);
      for (int m = 0; m < M; ++m)
        for (int i = 0; i < hidden; ++i) {  // the vector exp: within a few ulp of the exact value
          const double g = gate_up[size_t(m) * 2 * hidden + i], u = gate_up[size_t(m) * 2 * hidden + hidden + i];
          const double exact = g / (1.0 + std::exp(-g)) * u;
          INFO(isa_name(isa) << " g=" << g << " u=" << u);
          REQUIRE(std::fabs(got[size_t(m) * hidden + i] - exact) <= 4e-7 * std::fabs(exact) + 1e-30);
        }
    }
}

TEST_CASE("rmsnorm and rope and the gated activations split across threads give each row its bits alone", "[kernels]") {
  const int M = 600, dim = 64, n_heads = 4, head_dim = 16, hidden = 96;  // each op over its split threshold
  auto x = random_vec(size_t(M) * dim, 7), weight = random_vec(dim, 8), gate_up = random_vec(size_t(M) * 2 * hidden, 9);
  std::vector<int> positions(M);
  for (int m = 0; m < M; ++m) positions[m] = (m * 37) % 1000;
  std::vector<float> norm_want(x.size()), norm_got(x.size()), rope_want = x, rope_got = x;
  reference::rmsnorm(x.data(), weight.data(), norm_want.data(), M, dim, 1e-5f);
  reference::rope(rope_want.data(), positions.data(), M, n_heads, head_dim, RopeSpec{10000.0f, RopeLayout::NeoX});
  std::vector<float> swiglu_want(size_t(M) * hidden), geglu_want(size_t(M) * hidden);
  for (int m = 0; m < M; ++m) {  // the kernels' own on each row alone
    const float* row = gate_up.data() + size_t(m) * 2 * hidden;
    CpuBackend(1).swiglu_rows(row, swiglu_want.data() + size_t(m) * hidden, 1, hidden);
    CpuBackend(1).geglu_rows(row, geglu_want.data() + size_t(m) * hidden, 1, hidden);
  }
  for (int threads : {1, 2, 3}) {
    INFO("threads " << threads);
    CpuBackend backend(threads);
    backend.rmsnorm(x.data(), weight.data(), norm_got.data(), M, dim, 1e-5f);
    REQUIRE(norm_got == norm_want);
    rope_got = x;
    backend.rope(rope_got.data(), positions.data(), M, n_heads, head_dim, 10000.0f, RopeLayout::NeoX);
    REQUIRE(rope_got == rope_want);
    std::vector<float> got(size_t(M) * hidden);
    backend.swiglu_rows(gate_up.data(), got.data(), M, hidden);
    REQUIRE(got == swiglu_want);
    backend.geglu_rows(gate_up.data(), got.data(), M, hidden);
    REQUIRE(got == geglu_want);
  }
}

TEST_CASE("rope rotates pairs in both layouts", "[kernels]") {
  const int head_dim = 8, n_heads = 2;
  std::vector<float> x(n_heads * head_dim);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i + 1);
  for (RopeLayout layout : {RopeLayout::Adjacent, RopeLayout::NeoX}) {
    auto y = x;
    const int pos = 3;
    CpuBackend(1).rope(y.data(), &pos, 1, n_heads, head_dim, 10000.0f, layout);
    for (int h = 0; h < n_heads; ++h)
      for (int i = 0; i < head_dim / 2; ++i) {
        const int a = layout == RopeLayout::Adjacent ? 2 * i : i;
        const int b = layout == RopeLayout::Adjacent ? 2 * i + 1 : i + head_dim / 2;
        const double th = pos / std::pow(10000.0, 2.0 * i / head_dim);
        const double x0 = x[h * head_dim + a], x1 = x[h * head_dim + b];
        REQUIRE(y[h * head_dim + a] == Approx(x0 * std::cos(th) - x1 * std::sin(th)).epsilon(1e-5));
        REQUIRE(y[h * head_dim + b] == Approx(x0 * std::sin(th) + x1 * std::cos(th)).epsilon(1e-5));
      }
  }
  // position 0 is the identity
  auto z = x;
  const int zero = 0;
  CpuBackend(1).rope(z.data(), &zero, 1, n_heads, head_dim, 10000.0f, RopeLayout::NeoX);
  REQUIRE(z == x);
}

TEST_CASE("rope: YaRN keeps the fast pairs' angles, scales the slow ones' and ramps between", "[kernels]") {
  const int head_dim = 16, pos = 1000;
  std::vector<float> x(head_dim);
  for (int i = 0; i < head_dim / 2; ++i) x[size_t(i)] = 1.0f;  // NeoX: the first half is each pair's x0
  RopeSpec spec{10000.0f, RopeLayout::NeoX, 0, 0.25f, 1.5f};
  spec.ext_factor = 1.0f;
  spec.yarn_low = 2.0f;
  spec.yarn_high = 5.0f;
  auto y = x;
  CpuBackend(1).rope(y.data(), &pos, 1, 1, head_dim, spec);
  for (int i = 0; i < head_dim / 2; ++i) {
    CAPTURE(i);
    const double freq = std::pow(10000.0, -2.0 * i / head_dim);
    const double mix = 1.0 - std::clamp((i - 2.0) / 3.0, 0.0, 1.0);  // 1 below pair 2, 0 from pair 5
    const double angle = pos * freq * (0.25 * (1 - mix) + mix);
    REQUIRE(y[size_t(i)] == Approx(1.5 * std::cos(angle)).margin(1e-4));
    REQUIRE(y[size_t(i + head_dim / 2)] == Approx(1.5 * std::sin(angle)).margin(1e-4));
  }
}

TEST_CASE("rope: partial rotary, frequency factors, position scaling and the attention factor", "[kernels]") {
  const int head_dim = 16, n_heads = 3, pos = 37;
  const auto x = random_vec(n_heads * head_dim, 5);
  auto rotated = [&](const RopeSpec& spec) {
    auto y = x;
    CpuBackend(1).rope(y.data(), &pos, 1, n_heads, head_dim, spec);
    return y;
  };
  for (RopeLayout layout : {RopeLayout::Adjacent, RopeLayout::NeoX}) {
    const auto plain = rotated(RopeSpec{1000.0f, layout});
    // Factors of 1 and scale 1 change nothing; factors of 4 are positions scaled by 1/4.
    const std::vector<float> ones(head_dim / 2, 1.0f), fours(head_dim / 2, 4.0f);
    REQUIRE(rotated(RopeSpec{1000.0f, layout, 0, 1.0f, 1.0f, ones.data()}) == plain);
    const auto by_factor = rotated(RopeSpec{1000.0f, layout, 0, 1.0f, 1.0f, fours.data()});
    const auto by_scale = rotated(RopeSpec{1000.0f, layout, 0, 0.25f});
    for (int i = 0; i < n_heads * head_dim; ++i) REQUIRE(by_factor[i] == Approx(by_scale[i]).margin(1e-5));
    // The attention factor scales every rotated value.
    const auto scaled = rotated(RopeSpec{1000.0f, layout, 0, 1.0f, 1.5f});
    for (int i = 0; i < n_heads * head_dim; ++i) REQUIRE(scaled[i] == Approx(1.5f * plain[i]).margin(1e-5));
  }
  // Partial rotary (12 of 16): the last 4 dimensions of each head pass through; the first 12 rotate as a
  // 12-dimensional head would (NeoX pairs (i, i + 6)).
  const auto partial = rotated(RopeSpec{1000.0f, RopeLayout::NeoX, 12});
  for (int h = 0; h < n_heads; ++h) {
    std::vector<float> head(x.begin() + h * head_dim, x.begin() + h * head_dim + 12);
    CpuBackend(1).rope(head.data(), &pos, 1, 1, 12, 1000.0f, RopeLayout::NeoX);
    for (int d = 0; d < 12; ++d) REQUIRE(partial[h * head_dim + d] == head[d]);
    for (int d = 12; d < 16; ++d) REQUIRE(partial[h * head_dim + d] == x[h * head_dim + d]);
  }
}

TEST_CASE("geglu is GELU's tanh approximation times up", "[kernels]") {
  // PyTorch: torch.nn.functional.gelu(torch.tensor([1.0, -2.0]), approximate="tanh") = [0.8411920, -0.0454023]
  const std::vector<float> gate_up{1.0f, -2.0f, 1.0f, 2.0f};  // one row: gate [1, -2], up [1, 2]
  std::vector<float> out(2);
  CpuBackend(1).geglu_rows(gate_up.data(), out.data(), 1, 2);
  REQUIRE(out[0] == Approx(0.8411920f).margin(1e-6));
  REQUIRE(out[1] == Approx(2 * -0.0454023f).margin(1e-6));
}

TEST_CASE("paged attention matches the reference over scattered blocks with GQA", "[kernels]") {
  for (int head_dim : {1, 3, 8, 17, 64})
    for (int block_size : {1, 3, 16}) {
      const int n_heads = 4, n_kv_heads = 2, kv_dim = n_kv_heads * head_dim, num_blocks = 64;
      auto keys = random_vec(size_t(num_blocks) * block_size * kv_dim, 11 + head_dim);
      auto values = random_vec(keys.size(), 12 + block_size);
      KvLayerView kv{keys.data(), values.data(), block_size, kv_dim};
      // two sequences with reversed, interleaved block tables; tokens at awkward positions
      const int max_blocks = 40;
      std::vector<int> tables(2 * max_blocks);
      for (int i = 0; i < max_blocks; ++i) tables[i] = 63 - i, tables[max_blocks + i] = i;
      std::vector<int> positions{0, 2, 16, 33, 1, 99};
      std::vector<int> token_seq{0, 0, 0, 1, 1, 1};
      for (int& p : positions) p = std::min(p, block_size * max_blocks / 2 - 1);
      AttentionMetadata meta;
      meta.num_tokens = int(positions.size());
      meta.positions = positions.data();
      meta.token_seq = token_seq.data();
      meta.block_tables = tables.data();
      meta.max_blocks_per_seq = max_blocks;
      auto q = random_vec(positions.size() * n_heads * head_dim, 13);
      std::vector<float> got(q.size()), want(q.size());
      // Llama's scores; then Gemma 2's: a query scale, soft-capping and a window of 5 (position 0 sees 1 key);
      // then gpt-oss's sinks, one above every score, one below, one between.
      const std::vector<float> sinks{3.0f, -4.0f, 0.2f, 0.0f};
      for (const AttentionSpec spec :
           {AttentionSpec{}, AttentionSpec{0.3f, 2.0f, 5}, AttentionSpec{0.0f, 0.0f, 5, sinks.data()}}) {
        reference::paged_attention(q.data(), kv, meta, n_heads, n_kv_heads, head_dim, want.data(), spec);
        for (Isa isa : supported_isas()) {
          CpuBackend(2, isa).paged_attention(q.data(), kv, meta, n_heads, n_kv_heads, head_dim, got.data(), spec);
          INFO("isa " << isa_name(isa) << " head_dim " << head_dim << " block " << block_size << " window "
                      << spec.window);
          for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).margin(2e-5));
        }
      }
    }
}

// The tiled attention groups a prefill's queries and stages their keys in chunks of up to 256; a query's bits
// must still be its own: each token of a 300-token prefill beside a second sequence's decode token equals that
// token alone, on 1 and 2 threads, per ISA and KV dtype, with and without a window and soft-capping.
TEST_CASE("paged attention: a query's bits are the same alone, in a long prefill and beside another sequence",
          "[kernels][invariance]") {
  const int n_heads = 8, n_kv_heads = 2, head_dim = 64, kv_dim = n_kv_heads * head_dim, block_size = 16;
  const int prefill = 300, max_blocks = 20, num_blocks = 2 * max_blocks;
  for (KvDtype dtype : {KvDtype::F32, KvDtype::F16, KvDtype::Bf16}) {
    const auto wide_k = random_vec(size_t(num_blocks) * block_size * kv_dim, 21),
               wide_v = random_vec(wide_k.size(), 22);
    std::vector<float> keys = wide_k, values = wide_v;  // 16-bit KV: the first half read as 16-bit elements
    if (dtype != KvDtype::F32)
      for (size_t i = 0; i < wide_k.size(); ++i) {
        auto* k16 = reinterpret_cast<uint16_t*>(keys.data());
        auto* v16 = reinterpret_cast<uint16_t*>(values.data());
        k16[i] = dtype == KvDtype::F16 ? f32_to_f16(wide_k[i]) : f32_to_bf16(wide_k[i]);
        v16[i] = dtype == KvDtype::F16 ? f32_to_f16(wide_v[i]) : f32_to_bf16(wide_v[i]);
      }
    const KvLayerView kv{keys.data(), values.data(), block_size, kv_dim, dtype};
    std::vector<int> tables(2 * max_blocks);
    for (int i = 0; i < max_blocks; ++i) tables[i] = num_blocks - 1 - 2 * i, tables[max_blocks + i] = 2 * i;
    // Sequence 1's decode token sits among sequence 0's prefill tokens, as a mixed batch orders them.
    std::vector<int> positions, token_seq;
    for (int t = 0; t < prefill; ++t) {
      positions.push_back(t), token_seq.push_back(0);
      if (t == 100) positions.push_back(277), token_seq.push_back(1);
    }
    const int n = int(positions.size());
    const auto q = random_vec(size_t(n) * n_heads * head_dim, 23);
    const std::vector<float> sinks{0.5f, -1.0f, 2.0f, 0.0f, 1.0f, -3.0f, 0.25f, 4.0f};
    for (const AttentionSpec spec :
         {AttentionSpec{}, AttentionSpec{0.3f, 2.0f, 37}, AttentionSpec{0.0f, 0.0f, 0, sinks.data()}})
      for (Isa isa : supported_isas()) {
        std::vector<float> batch(q.size());
        CpuBackend(2, isa).paged_attention(q.data(), kv,
                                           {n, positions.data(), token_seq.data(), tables.data(), max_blocks}, n_heads,
                                           n_kv_heads, head_dim, batch.data(), spec);
        const CpuBackend one(1, isa);
        for (int tt = 0; tt < n; ++tt) {
          std::vector<float> alone(size_t(n_heads) * head_dim);
          one.paged_attention(q.data() + size_t(tt) * n_heads * head_dim, kv,
                              {1, &positions[size_t(tt)], &token_seq[size_t(tt)], tables.data(), max_blocks}, n_heads,
                              n_kv_heads, head_dim, alone.data(), spec);
          INFO("isa " << isa_name(isa) << " kv " << kv_dtype_name(dtype) << " token " << tt << " window "
                      << spec.window);
          REQUIRE(std::memcmp(alone.data(), batch.data() + size_t(tt) * n_heads * head_dim, alone.size() * 4) == 0);
        }
      }
  }
}

TEST_CASE("an attention sink takes its share of the softmax and adds no value", "[kernels]") {
  // One key: the output is its value times e^s / (e^s + e^sink).
  const int head_dim = 4;
  std::vector<float> keys{1, 0, 0, 0}, values{2, -1, 0.5f, 4}, q{0.5f, 0, 0, 0};
  const KvLayerView kv{keys.data(), values.data(), 1, head_dim};
  const int position = 0, seq = 0, table = 0;
  const float sink = 0.7f, score = 0.5f / 2.0f;  // q . k / sqrt(4)
  const float share = std::exp(score) / (std::exp(score) + std::exp(sink));
  for (Isa isa : supported_isas()) {
    std::vector<float> out(head_dim);
    CpuBackend(1, isa).paged_attention(q.data(), kv, {1, &position, &seq, &table, 1}, 1, 1, head_dim, out.data(),
                                       AttentionSpec{0.0f, 0.0f, 0, &sink});
    INFO("isa " << isa_name(isa));
    for (int d = 0; d < head_dim; ++d) REQUIRE(out[size_t(d)] == Approx(values[size_t(d)] * share).epsilon(1e-6));
  }
}

TEST_CASE("kv_write lands each token at its slot", "[kernels]") {
  const int kv_dim = 3, block_size = 4;
  std::vector<float> keys(8 * block_size * kv_dim, -1.0f), values(keys.size(), -1.0f);
  KvLayerView kv{keys.data(), values.data(), block_size, kv_dim};
  std::vector<float> k{1, 2, 3, 4, 5, 6}, v{7, 8, 9, 10, 11, 12};
  std::vector<int64_t> slots{29, 2};
  CpuBackend(1).kv_write(kv, k.data(), v.data(), slots.data(), 2);
  REQUIRE(keys[29 * 3 + 0] == 1);
  REQUIRE(keys[29 * 3 + 2] == 3);
  REQUIRE(values[2 * 3 + 1] == 11);
  REQUIRE(keys[28 * 3 + 2] == -1);
  REQUIRE(keys[30 * 3] == -1);
}

TEST_CASE("KvCache::copy_block copies one block's keys and values in every layer", "[kernels]") {
  LlamaConfig c;
  c.dim = 8, c.hidden_dim = 8, c.n_layers = 3, c.n_heads = 2, c.n_kv_heads = 1, c.vocab_size = 4, c.max_seq_len = 16;
  KvCache kv(c, 4, 2);
  const int block = 2 * c.kv_dim();
  for (int l = 0; l < 3; ++l) {
    KvLayerView v = kv.layer(l);
    for (int i = 0; i < 4 * block; ++i)
      v.keys_as<float>()[i] = float(l * 1000 + i), v.values_as<float>()[i] = -float(l * 1000 + i);
  }
  kv.copy_block(1, 3);
  for (int l = 0; l < 3; ++l) {
    KvLayerView v = kv.layer(l);
    for (int i = 0; i < block; ++i) {
      REQUIRE(v.keys_as<float>()[3 * block + i] == float(l * 1000 + block + i));
      REQUIRE(v.values_as<float>()[3 * block + i] == -float(l * 1000 + block + i));
    }
    REQUIRE(v.keys_as<float>()[2 * block] == float(l * 1000 + 2 * block));  // neighbours untouched
  }
}

namespace {

// The VmFlags line of the mapping that holds address p (/proc/self/smaps), empty if none does.
std::string vm_flags_at(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &begin, &end) == 2)
      inside = at >= begin && at < end;
    else if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return "";
}

}  // namespace

TEST_CASE("Large weight arrays are 2 MiB aligned, advised for huge pages before their first touch, small ones not",
          "[kernels]") {
  HugePageAllocator<uint8_t> alloc;
  const size_t big = (size_t(5) << 20) + 123;  // two whole huge pages and a tail
  uint8_t* p = alloc.allocate(big);
  REQUIRE(reinterpret_cast<uintptr_t>(p) % (size_t(2) << 20) == 0);
  const std::string head = vm_flags_at(p), tail = vm_flags_at(p + big - 1);
  INFO("head " << head << "; tail " << tail);
  if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {  // a kernel built with THP takes the advice
    REQUIRE(head.find(" hg") != std::string::npos);                    // the whole 2 MiB pages: advised
    REQUIRE(tail.find(" hg") == std::string::npos);  // the tail past them: resident only as far as it is used
  } else {
    WARN("this kernel has no transparent huge pages: the advice is not checked");
  }
  std::memset(p, 0x5a, big);
  REQUIRE(std::count(p, p + big, uint8_t(0x5a)) == std::ptrdiff_t(big));
  alloc.deallocate(p, big);
  REQUIRE(vm_flags_at(p).empty());  // unmapped
  uint8_t* small = alloc.allocate(1000);
  REQUIRE(reinterpret_cast<uintptr_t>(small) % 64 == 0);
  alloc.deallocate(small, 1000);
}
