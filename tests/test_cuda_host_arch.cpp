// The CUDA path of every architecture without a GPU: the kernel bodies the architectures add (RoPE scaling and
// partial rotary, GeGLU, biases, scales, soft-capping, windowed attention) against the CPU reference, and
// DeviceLlama over the host emulation against the CPU forward pass on each tiny model.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "engine_core_runs.hpp"
#include "host_device_ops.hpp"
#include "model/cuda/device_llama.hpp"
#include "tiny_arch.hpp"

using namespace parley;
using parley::test::HostOps;

namespace {

double max_abs_error(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - want[i]));
  return worst;
}

// One sequence's prefill, every position's logits.
// KV group g's blocks follow group g - 1's, each group's out of order.
ForwardBatch prefill(const std::vector<int>& tokens, int block_size, int num_kv_groups) {
  ForwardBatch b;
  const int nb = int(tokens.size() + block_size - 1) / block_size;
  b.token_ids = tokens;
  b.max_blocks_per_seq = nb;
  b.num_kv_groups = num_kv_groups;
  for (int g = 0; g < num_kv_groups; ++g)
    for (int i = 0; i < nb; ++i) b.block_tables.push_back(g * nb + nb - 1 - i);
  for (int p = 0; p < int(tokens.size()); ++p)
    b.positions.push_back(p), b.token_seq.push_back(0), b.logits_indices.push_back(p);
  for (int g = 0; g < num_kv_groups; ++g)
    for (int p = 0; p < int(tokens.size()); ++p)
      b.slot_mapping.push_back(int64_t(b.block_tables[size_t(g * nb + p / block_size)]) * block_size + p % block_size);
  return b;
}

std::vector<int> long_prompt(int n) {  // past every tiny window, and past Phi-3's original context
  std::vector<int> t{1};
  for (int i = 1; i < n; ++i) t.push_back(3 + (i * 37) % 500);
  return t;
}

}  // namespace

TEST_CASE("CUDA kernel bodies of the architectures equal the CPU reference bit for bit", "[cuda-host][arch]") {
  const HostOps ops;
  const int M = 5, heads = 3, hd = 16, dim = heads * hd;
  const auto x = test::random_floats(size_t(M) * dim, 1);
  const std::vector<int> positions{0, 3, 17, 200, 1023};
  const auto factors = test::random_floats(4, 2, 0.5f);
  std::vector<float> divisors;
  for (float f : factors) divisors.push_back(1.5f + f);  // positive, as rope_freqs are
  for (RopeLayout layout : {RopeLayout::Adjacent, RopeLayout::NeoX})
    for (int rot : {0, 8}) {
      CAPTURE(int(layout), rot);
      const cpu::RopeSpec spec{500000.0f, layout, rot, 0.25f, 1.2f, rot ? divisors.data() : nullptr};
      std::vector<float> got = x, want = x;
      ops.rope(got.data(), positions.data(), M, heads, hd, spec);
      cpu::reference::rope(want.data(), positions.data(), M, heads, hd, spec);
      REQUIRE(got == want);
      REQUIRE(got != x);
      if (rot)  // dimensions past the rotary ones pass through
        for (int r = 0; r < M * heads; ++r)
          REQUIRE(std::equal(got.begin() + r * hd + rot, got.begin() + (r + 1) * hd, x.begin() + r * hd + rot));
    }

  const auto up = test::random_floats(x.size(), 3, 4.0f);
  std::vector<float> got(x.size()), want(x.size());
  ops.geglu(x.data(), up.data(), got.data(), int64_t(x.size()));
  cpu::reference::geglu(x.data(), up.data(), want.data(), int64_t(x.size()));
  REQUIRE(got == want);

  got = up;
  ops.softcap(got.data(), 1.5f, int64_t(got.size()));
  for (size_t i = 0; i < up.size(); ++i) REQUIRE(got[i] == cpu::reference::softcap(up[i], 1.5f));
  REQUIRE(*std::max_element(got.begin(), got.end()) < 1.5f);

  got = x;
  ops.scale(got.data(), std::sqrt(float(dim)), int64_t(got.size()));
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(got[i] == x[i] * std::sqrt(float(dim)));

  const auto bias = test::random_floats(dim, 4);
  got = x;
  ops.add_bias(got.data(), bias.data(), M, dim);
  for (int m = 0; m < M; ++m)
    for (int j = 0; j < dim; ++j) REQUIRE(got[size_t(m * dim + j)] == x[size_t(m * dim + j)] + bias[size_t(j)]);
}

TEST_CASE("CUDA paged attention honours windows, soft-capping and the query scale, split or not", "[cuda-host][arch]") {
  const int n_heads = 4, n_kv_heads = 2, head_dim = 16, block_size = 4, num_blocks = 12, kv_dim = n_kv_heads * head_dim;
  // Sequence 0 prefills 0..13, sequence 1 decodes at 29 (its window starts in its 8th block).
  std::vector<int> positions, token_seq;
  for (int p = 0; p < 14; ++p) positions.push_back(p), token_seq.push_back(0);
  positions.push_back(29), token_seq.push_back(1);
  const std::vector<int> tables{7, 2, 0, 3, 0, 0, 0, 0, 9, 1, 4, 8, 11, 5, 10, 6};  // 2 seqs x 8
  const cpu::AttentionMetadata meta{int(positions.size()), positions.data(), token_seq.data(), tables.data(), 8};
  const int T = meta.num_tokens;
  auto keys = test::random_floats(size_t(num_blocks) * block_size * kv_dim, 7, 3.0f),
       values = test::random_floats(keys.size(), 8);
  const cpu::KvLayerView kv{keys.data(), values.data(), block_size, kv_dim};
  const auto q = test::random_floats(size_t(T) * n_heads * head_dim, 9, 3.0f);
  const HostOps ops;
  HostOps split4;  // windows that skip whole splits
  split4.attention_splits(4, int64_t(1) << 20);
  HostOps chunked;  // one token's partials per chunk
  chunked.attention_splits(4, int64_t(n_heads) * 8);
  std::vector<float> plain(q.size());
  ops.paged_attention(q.data(), kv, meta, n_heads, n_kv_heads, head_dim, plain.data());
  for (const cpu::AttentionSpec spec : {cpu::AttentionSpec{0.0f, 0.0f, 5}, cpu::AttentionSpec{0.0f, 1.0f, 0},
                                        cpu::AttentionSpec{0.3f, 2.0f, 6}, cpu::AttentionSpec{0.0f, 0.0f, 64}}) {
    CAPTURE(spec.scale, spec.softcap, spec.window);
    std::vector<float> want(q.size()), got(q.size()), split(q.size()), chunk(q.size());
    cpu::reference::paged_attention(q.data(), kv, meta, n_heads, n_kv_heads, head_dim, want.data(), spec);
    ops.paged_attention(q.data(), kv, meta, n_heads, n_kv_heads, head_dim, got.data(), spec);
    split4.paged_attention(q.data(), kv, meta, n_heads, n_kv_heads, head_dim, split.data(), spec);
    chunked.paged_attention(q.data(), kv, meta, n_heads, n_kv_heads, head_dim, chunk.data(), spec);
    CHECK(max_abs_error(got, want) < 1e-5);
    CHECK(max_abs_error(split, want) < 1e-5);
    REQUIRE(chunk == split);
    // A window wider than every position, alone, is no window.
    REQUIRE((got == plain) == (spec.window == 64));
  }
}

TEST_CASE("the CUDA model path refuses gpt-oss's sinks and biased experts, naming the CPU", "[cuda-host][arch]") {
  test::TinyArch m("gpt-oss");
  REQUIRE_THROWS_WITH(cuda::DeviceLlama<HostOps>(std::make_unique<HostOps>(), m.file.config, m.file.weights,
                                                 test::device_options(m.config(64, true), 0)),
                      Catch::Contains("run on the CPU only for now (--device cpu)"));
}

TEST_CASE("the CUDA model path (host emulation) of every architecture equals the CPU forward", "[cuda-host][arch]") {
  for (const char* arch : test::kDeviceArchs) {
    CAPTURE(arch);
    test::TinyArch m(arch);
    const SchedulerConfig c = m.config(64, true);
    auto device = [&](int graphs) {
      return std::make_unique<cuda::DeviceLlama<HostOps>>(std::make_unique<HostOps>(), m.file.config, m.file.weights,
                                                          test::device_options(c, graphs));
    };
    const std::vector<int> tokens = long_prompt(60);
    const ForwardBatch b = prefill(tokens, c.block_size, KvCacheLayout::for_model(m.file.config).num_groups());
    std::vector<float> got, want;
    REQUIRE_FALSE(device(0)->forward(b, got));
    KvCache kv(m.file.config, 64, c.block_size);
    m.model.forward(b, kv, want);
    CHECK(max_abs_error(got, want) < 1e-4);  // the reference GEMM against the CPU backend's: rounding only

    // Through the engine: graphs replay what eager runs compute, and greedy ids are the CPU backend's.
    const Tokenizer tok(*m.file.vocab);
    const std::string shared =
        "Once upon a time, there was a little girl named Lily. She liked to play in the park with her dog ";
    const auto reqs =
        test::mixed_requests(tok, {shared + "and her friend Tom.", shared + "every day.", "The sun was hot."});
    const test::CoreRun eager = test::run_core(device(0), reqs, c, false);
    const test::CoreRun graphs = test::run_core(device(8), reqs, c, true);
    test::require_same_outputs(graphs, eager);
    REQUIRE(graphs.stats.num_graph_replays > 10);
    const test::CoreRun cpu_run = test::run_core(m.model, reqs, c, false);
    for (const char* id : {"m0", "m2", "m4"}) REQUIRE(eager.tokens.at(id) == cpu_run.tokens.at(id));
  }
}
