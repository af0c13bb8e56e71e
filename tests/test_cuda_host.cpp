// The CUDA backend without a GPU: every kernel body (what one GPU thread runs) against the CPU reference, and
// the CUDA model's orchestration (DeviceLlama) over the host emulation in host_device_ops.hpp: llama2.c's
// greedy ids, graph replay equal to eager, KV export/import in KvCache's layout. tests/gpu/ runs the same
// on a GPU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/sampler.hpp"
#include "engine_core_runs.hpp"
#include "host_device_ops.hpp"
#include "kernel_inputs.hpp"
#include "model/cuda/device_llama.hpp"

using namespace parley;
using parley::test::host_launch;
using parley::test::HostOps;

namespace {

// A mixed batch over shuffled blocks of 4: sequence 0 prefills positions 0..6, sequence 1 decodes at 21,
// sequence 2 verifies positions 9..11.
struct MixedBatch {
  std::vector<int> positions{0, 1, 2, 3, 4, 5, 6, 21, 9, 10, 11};
  std::vector<int> token_seq{0, 0, 0, 0, 0, 0, 0, 1, 2, 2, 2};
  std::vector<int> block_tables{7, 2, 0, 0, 0, 0, 3, 9, 1, 4, 8, 11, 5, 10, 6, 0, 0, 0};  // 3 seqs x 6
  int max_blocks = 6;
  cpu::AttentionMetadata meta() const {
    return {int(positions.size()), positions.data(), token_seq.data(), block_tables.data(), max_blocks};
  }
};

double max_rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(double(got[i]) - want[i]) / std::max(1e-3, std::abs(double(want[i]))));
  return worst;
}

}  // namespace

TEST_CASE("CUDA kernel bodies equal the CPU reference bit for bit", "[cuda-host]") {
  const HostOps ops;
  const int M = 5, dim = 48;
  const auto x = test::random_floats(size_t(M) * dim, 1), w = test::random_floats(dim, 2);
  std::vector<float> got(x.size()), want(x.size());
  ops.rmsnorm(x.data(), w.data(), got.data(), M, dim, 1e-5f);
  cpu::reference::rmsnorm(x.data(), w.data(), want.data(), M, dim, 1e-5f);
  REQUIRE(got == want);

  const std::vector<int> positions{0, 3, 17, 200, 1023};
  for (RopeLayout layout : {RopeLayout::Adjacent, RopeLayout::NeoX}) {
    got = x, want = x;
    ops.rope(got.data(), positions.data(), M, 3, 16, 10000.0f, layout);
    cpu::reference::rope(want.data(), positions.data(), M, 3, 16, 10000.0f, layout);
    REQUIRE(got == want);
    REQUIRE(got != x);
  }

  const auto up = test::random_floats(x.size(), 3);
  ops.swiglu(x.data(), up.data(), got.data(), int64_t(x.size()));
  cpu::reference::swiglu(x.data(), up.data(), want.data(), int64_t(x.size()));
  REQUIRE(got == want);

  const auto table = test::random_floats(10 * size_t(dim), 4);
  const std::vector<int> tokens{9, 0, 3, 3, 7};
  ops.embedding(table.data(), tokens.data(), M, dim, got.data());
  cpu::reference::embedding(table.data(), tokens.data(), M, dim, want.data());
  REQUIRE(got == want);

  got = x;
  ops.add(got.data(), up.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(got[i] == x[i] + up[i]);

  const std::vector<int> rows{4, 0, 4};
  std::vector<float> gathered(3 * size_t(dim));
  ops.gather_rows(x.data(), rows.data(), 3, dim, gathered.data());
  for (int s = 0; s < 3; ++s)
    REQUIRE(
        std::equal(gathered.begin() + s * dim, gathered.begin() + (s + 1) * dim, x.begin() + rows[size_t(s)] * dim));
}

TEST_CASE("CUDA KV write skips padding slots and otherwise equals the CPU reference", "[cuda-host]") {
  const HostOps ops;
  const int kv_dim = 8, slots_total = 12;
  std::vector<float> keys(slots_total * kv_dim, -1.0f), values(keys), ref_keys(keys), ref_values(keys);
  const auto k = test::random_floats(3 * kv_dim, 5), v = test::random_floats(3 * kv_dim, 6);
  const std::vector<int64_t> slots{7, -1, 2};
  ops.kv_write({keys.data(), values.data(), 4, kv_dim}, k.data(), v.data(), slots.data(), 3);
  const std::vector<int64_t> valid{7, 2};
  const std::vector<float> k_valid(k.begin(), k.begin() + kv_dim), v_valid(v.begin(), v.begin() + kv_dim);
  std::vector<float> k2(k_valid), v2(v_valid);
  k2.insert(k2.end(), k.begin() + 2 * kv_dim, k.end()), v2.insert(v2.end(), v.begin() + 2 * kv_dim, v.end());
  cpu::reference::kv_write({ref_keys.data(), ref_values.data(), 4, kv_dim}, k2.data(), v2.data(), valid.data(), 2);
  REQUIRE(keys == ref_keys);
  REQUIRE(values == ref_values);
  REQUIRE(std::count(keys.begin(), keys.end(), -1.0f) == (slots_total - 2) * kv_dim);
}

TEST_CASE("CUDA paged attention matches the CPU backend on a mixed batch and is batch-invariant", "[cuda-host]") {
  const HostOps ops;
  const cpu::CpuBackend cpu_backend(1);
  const int n_heads = 4, n_kv_heads = 2, head_dim = 16, block_size = 4, num_blocks = 12;
  const int kv_dim = n_kv_heads * head_dim;
  MixedBatch b;
  const int T = int(b.positions.size());
  auto keys = test::random_floats(size_t(num_blocks) * block_size * kv_dim, 7),
       values = test::random_floats(keys.size(), 8);
  const cpu::KvLayerView kv{keys.data(), values.data(), block_size, kv_dim};
  const auto q = test::random_floats(size_t(T) * n_heads * head_dim, 9);
  std::vector<float> got(q.size()), want(q.size()), simd(q.size());
  ops.paged_attention(q.data(), kv, b.meta(), n_heads, n_kv_heads, head_dim, got.data());
  cpu::reference::paged_attention(q.data(), kv, b.meta(), n_heads, n_kv_heads, head_dim, want.data());
  cpu_backend.paged_attention(q.data(), kv, b.meta(), n_heads, n_kv_heads, head_dim, simd.data());
  CHECK(max_rel_error(got, want) < 1e-4);  // online against two-pass softmax: float rounding only
  CHECK(max_rel_error(got, simd) < 1e-4);

  // The decode token alone gives the same bits as inside the batch.
  const int t = 7;
  const std::vector<int> pos{b.positions[t]}, seq{0};
  const std::vector<int> table(b.block_tables.begin() + b.max_blocks, b.block_tables.begin() + 2 * b.max_blocks);
  const cpu::AttentionMetadata alone{1, pos.data(), seq.data(), table.data(), b.max_blocks};
  std::vector<float> one(size_t(n_heads) * head_dim);
  ops.paged_attention(q.data() + size_t(t) * n_heads * head_dim, kv, alone, n_heads, n_kv_heads, head_dim, one.data());
  REQUIRE(std::equal(one.begin(), one.end(), got.begin() + size_t(t) * n_heads * head_dim));

  // Splits of 4 positions (up to 6 for position 21), combined: still the reference; and the same bits whether
  // the pass runs at once or one token per chunk (a scratch of one token's partials), alone or batched.
  HostOps split4;
  split4.attention_splits(4, int64_t(1) << 20);
  std::vector<float> whole(q.size()), chunked(q.size()), one4(one.size());
  split4.paged_attention(q.data(), kv, b.meta(), n_heads, n_kv_heads, head_dim, whole.data());
  CHECK(max_rel_error(whole, want) < 1e-4);
  CHECK(whole != got);  // another summation order: the splits really ran
  split4.attention_splits(4, int64_t(n_heads) * 6);
  split4.paged_attention(q.data(), kv, b.meta(), n_heads, n_kv_heads, head_dim, chunked.data());
  REQUIRE(chunked == whole);
  split4.paged_attention(q.data() + size_t(t) * n_heads * head_dim, kv, alone, n_heads, n_kv_heads, head_dim,
                         one4.data());
  REQUIRE(std::equal(one4.begin(), one4.end(), whole.begin() + size_t(t) * n_heads * head_dim));
  split4.attention_splits(4, int64_t(n_heads) * 6 - 1);
  REQUIRE_THROWS_AS(split4.paged_attention(q.data(), kv, b.meta(), n_heads, n_kv_heads, head_dim, chunked.data()),
                    std::logic_error);
}

TEST_CASE("CUDA paged attention holds every head size up to 256, under each accumulator bound", "[cuda-host]") {
  const HostOps ops;
  const int n_heads = 2, n_kv_heads = 1, block_size = 4, num_blocks = 12;
  MixedBatch b;
  for (int head_dim : {8, 64, 65, 128, 129, 256}) {
    CAPTURE(head_dim);
    auto keys = test::random_floats(size_t(num_blocks) * block_size * head_dim, 7),
         values = test::random_floats(keys.size(), 8);
    const cpu::KvLayerView kv{keys.data(), values.data(), block_size, n_kv_heads * head_dim};
    const auto q = test::random_floats(b.positions.size() * n_heads * head_dim, 9);
    std::vector<float> got(q.size()), want(q.size());
    ops.paged_attention(q.data(), kv, b.meta(), n_heads, n_kv_heads, head_dim, got.data());
    cpu::reference::paged_attention(q.data(), kv, b.meta(), n_heads, n_kv_heads, head_dim, want.data());
    CHECK(max_rel_error(got, want) < 1e-4);
  }
  std::vector<float> big(size_t(257) * n_heads * b.positions.size());
  const cpu::KvLayerView kv{big.data(), big.data(), block_size, 257};
  REQUIRE_THROWS_AS(ops.paged_attention(big.data(), kv, b.meta(), n_heads, n_kv_heads, 257, big.data()),
                    std::invalid_argument);
}

TEST_CASE("CUDA sampling body draws the CPU sampler's tokens", "[cuda-host]") {
  for (cpu::Isa isa : test::supported_isas())
    for (const int vocab : {64, 1000, 32003}) {  // blocks of 16 ids, whole and not
      INFO(cpu::isa_name(isa) << ", vocab " << vocab);
      Sampler sampler(isa);
      const int trials = vocab == 64 ? 300 : 60;
      int greedy_checked = 0, distinct = 0;
      std::vector<int> seen(size_t(vocab), 0);
      for (int trial = 0; trial < trials; ++trial) {
        const auto logits = test::random_floats(vocab, 100 + uint32_t(trial), 2.0f);
        SamplingParams p;
        p.temperature = trial % 3 == 0 ? 0.0f : (trial % 3 == 1 ? 0.7f : 1.3f);
        p.min_p = trial % 2 ? 0.05f : 0.0f;
        const uint64_t seed = 1000 + uint64_t(trial);
        const int64_t position = trial * 7;
        const int want = sampler.sample(logits.data(), vocab, p, seed, position);
        const int got = cuda::body::sample_row(logits.data(), vocab, {p.temperature, p.min_p, seed, position});
        REQUIRE(got == want);
        greedy_checked += p.temperature == 0.0f;
        distinct += seen[size_t(got)]++ == 0;
      }
      REQUIRE(greedy_checked == trials / 3);
      REQUIRE(distinct > trials / 10);  // the draws really spread over the vocabulary
    }
}

TEST_CASE("CUDA exact verification keeps drafts while they equal the sampled tokens", "[cuda-host]") {
  // Three rows of k = 3: all accepted, the second rejected, a placeholder first.
  const std::vector<int> sampled{5, 6, 7, 8, 5, 9, 7, 8, 4, 4, 4, 4};
  const std::vector<int> drafts{5, 6, 7, 5, 6, 7, -1, 4, 4};
  std::vector<int> accepted(3);
  host_launch(3, [&](int64_t r) {
    accepted[r] = cuda::body::verify_exact_row(sampled.data() + r * 4, drafts.data() + r * 3, 3);
  });
  REQUIRE(accepted == std::vector<int>{3, 1, 0});
}

namespace {

using HostLlama = cuda::DeviceLlama<HostOps>;

std::unique_ptr<HostLlama> host_llama(const test::Loaded& m, const SchedulerConfig& c, int max_graph_batch,
                                      int query_len = 1, bool sample_on_device = true) {
  cuda::DeviceLlamaOptions o = test::device_options(c, max_graph_batch, query_len);
  o.sample_on_device = sample_on_device;
  return std::make_unique<HostLlama>(std::make_unique<HostOps>(), m.model.config(), m.file.weights, o);
}

}  // namespace

TEST_CASE("the CUDA model path (host emulation) reproduces llama2.c's greedy ids, with graphs and without",
          "[cuda-host]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  SchedulerConfig c = test::model_scheduler_config(m, 64);
  for (int graphs : {0, 8}) {
    const auto reqs = test::greedy_reference_requests();
    const auto refs = test::greedy_references();
    const auto run = test::run_core(host_llama(m, c, graphs), reqs, c, false);
    for (size_t i = 0; i < refs.size(); ++i) REQUIRE(run.tokens.at("r" + std::to_string(i)) == refs[i].output_ids);
    INFO("graphs up to " << graphs);
    REQUIRE(run.stats.num_eager_steps > 0);  // the prefills
    REQUIRE((run.stats.num_graph_replays > 0) == (graphs > 0));
  }
}

TEST_CASE("CUDA graph replay equals eager runs (host emulation), with sampling, splits, preemption and speculation",
          "[cuda-host]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const auto reqs = test::mixed_requests(tok, {"Once upon a time", "Lily saw a big", "The cat"});
  for (int blocks : {64, 12}) {  // 12 blocks of 16 preempt
    SchedulerConfig c = test::model_scheduler_config(m, blocks);
    c.max_num_batched_tokens = 64;  // chunked prefill
    const auto eager = test::run_core(host_llama(m, c, 0), reqs, c, false);
    const auto graphs = test::run_core(host_llama(m, c, 4), reqs, c, true);  // 5+ decodes: some run eagerly
    test::require_same_outputs(graphs, eager);
    REQUIRE(graphs.stats.num_graph_replays > 10);
    REQUIRE(eager.stats.num_graph_replays == 0);
    if (blocks == 12) REQUIRE(graphs.stats.num_preemptions > 0);
    // The CPU backend samples the same tokens for the greedy requests (its GEMM rounds differently).
    const auto cpu_run = test::run_core(m.model, reqs, c, false);
    for (const char* id : {"m0", "m2", "m4"}) REQUIRE(graphs.tokens.at(id) == cpu_run.tokens.at(id));
  }
  // Speculative decoding: every decode step is uniform with 1 + k query tokens, and those replay graphs.
  SchedulerConfig c = test::model_scheduler_config(m, 64);
  const auto spec = SpeculativeConfig::parse(
      R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 2, "prompt_lookup_max": 4})");
  const auto eager = test::run_core(host_llama(m, with_speculation(c, spec), 0, 3), reqs, c, false, spec);
  const auto graphs =
      test::run_core(host_llama(m, with_speculation(c, spec), 16, 3), reqs, c, false, spec);  // all 9 sequences
  test::require_same_outputs(graphs, eager);
  REQUIRE(graphs.stats.num_graph_replays == graphs.stats.num_uniform_decode_steps);
  REQUIRE(graphs.stats.spec_num_accepted_tokens > 0);
}

TEST_CASE("sampling on the device (host emulation) equals sampling on the host", "[cuda-host]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  auto reqs = test::mixed_requests(tok, {"Once upon a time", "Lily saw a big", "The cat"});
  for (Request& r : reqs)
    if (r.request_id == "m3") r.sampling_params.min_p = 0.1f;  // min_p on the device too
  const SchedulerConfig c = test::model_scheduler_config(m, 64);
  auto on_device = host_llama(m, c, 8);
  const HostLlama* device = on_device.get();
  EngineCore core(std::move(on_device), c);
  const auto on = test::run_to_end(core, reqs, false);
  const auto off = test::run_core(host_llama(m, c, 8, 1, false), reqs, c, false);
  test::require_same_outputs(on, off);
  // Greedy and seeded rows, without logprobs, penalties or min_tokens still masking, sampled there.
  REQUIRE(device->stats().rows_sampled_on_device > 100);
  REQUIRE(device->stats().rows_sampled_on_device < int64_t(on.stats.num_steps) * 9);

  // Speculation: plain verifying rows draw every position on the device too.
  const auto spec =
      SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 2})");
  const SchedulerConfig sc = with_speculation(c, spec);
  auto spec_device = host_llama(m, sc, 16, 3);
  const HostLlama* sd = spec_device.get();
  EngineCore spec_core(std::move(spec_device), c, false, spec);
  const auto spec_on = test::run_to_end(spec_core, reqs, false);
  test::require_same_outputs(spec_on, test::run_core(host_llama(m, sc, 16, 3, false), reqs, c, false, spec));
  test::require_same_outputs(spec_on, off);  // and speculation changes no token
  REQUIRE(spec_on.stats.spec_num_accepted_tokens > 0);
  REQUIRE(sd->stats().rows_sampled_on_device > 3 * 100);
}

TEST_CASE("the CUDA model's KV export, import and block copy keep KvCache's layout", "[cuda-host]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  SchedulerConfig c = test::model_scheduler_config(m, 6);
  auto device = host_llama(m, c, 0);
  KvCache host(m.model.config(), 6, c.block_size);
  const std::vector<int> ids{4, 1};
  const auto data = test::kv_bytes_of(test::random_floats(size_t(host.elements_per_block()) * ids.size(), 11));
  device->import_blocks(ids, data);
  host.import_blocks(ids, data);
  device->copy_block(4, 0);
  host.copy_block(4, 0);
  const std::vector<int> all{0, 1, 2, 3, 4, 5};
  REQUIRE(device->export_blocks(all) == host.export_blocks(all));
  REQUIRE(device->export_blocks(std::vector<int>{0}) == host.export_blocks(std::vector<int>{4}));
  REQUIRE_THROWS_AS(device->export_blocks(std::vector<int>{6}), std::out_of_range);
  REQUIRE_THROWS_AS(device->import_blocks(ids, std::vector<uint8_t>(3)), std::invalid_argument);
}

TEST_CASE("the CUDA model refuses a batch it cannot hold before any kernel runs", "[cuda-host]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  SchedulerConfig c = test::model_scheduler_config(m, 4);
  auto device = host_llama(m, c, 0);
  ForwardBatch b;
  b.token_ids = {1}, b.positions = {0}, b.token_seq = {0}, b.slot_mapping = {0}, b.block_tables = {0};
  b.max_blocks_per_seq = 1, b.logits_indices = {0};
  std::vector<float> logits;
  REQUIRE_FALSE(device->forward(b, logits));
  REQUIRE(logits.size() == size_t(m.model.config().vocab_size));
  auto bad = b;
  bad.slot_mapping = {4 * 16};
  REQUIRE_THROWS_AS(device->forward(bad, logits), std::out_of_range);
  bad = b, bad.block_tables = {4};
  REQUIRE_THROWS_AS(device->forward(bad, logits), std::out_of_range);
  bad = b, bad.token_ids = {m.model.config().vocab_size};
  REQUIRE_THROWS_AS(device->forward(bad, logits), std::out_of_range);
  bad = b, bad.positions = {c.block_size};  // past its one-block table: attention would read another row's blocks
  REQUIRE_THROWS_AS(device->forward(bad, logits), std::out_of_range);
  bad = b, bad.slot_mapping = {};  // fewer slots than tokens
  REQUIRE_THROWS_AS(device->forward(bad, logits), std::invalid_argument);
  REQUIRE_THROWS_AS(host_llama(m, c, 0, 0), std::invalid_argument);
}

TEST_CASE("the CUDA model fills its share of device memory with KV, after the graphs and the staging (host emulation)",
          "[cuda-host]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const SchedulerConfig c = test::model_scheduler_config(m, 64);
  const int64_t device_bytes = int64_t(64) << 20, graph_bytes = int64_t(1) << 20, staging = int64_t(2) << 20;
  const double share = 0.5 * double(device_bytes);
  struct Sized {
    std::unique_ptr<HostLlama> model;
    std::shared_ptr<int64_t> in_use;
  };
  const auto sized = [&](int max_graph_batch, double utilization) {
    cuda::DeviceLlamaOptions o = test::device_options(c, max_graph_batch);
    o.num_blocks = 0, o.gpu_memory_utilization = utilization, o.staging_bytes = staging;
    auto ops = std::make_unique<HostOps>(device_bytes, graph_bytes);
    Sized s{nullptr, ops->usage()};
    s.model = std::make_unique<HostLlama>(std::move(ops), m.model.config(), m.file.weights, o);
    return s;
  };
  const Sized eager = sized(0, 0.5), graphs = sized(8, 0.5);  // graphs of 1, 2, 4 and 8 sequences
  const int64_t per_block = eager.model->bytes_per_block();
  for (const Sized* s : {&eager, &graphs}) {
    INFO(s->model->num_blocks() << " blocks, " << *s->in_use << " bytes in use");
    REQUIRE(double(*s->in_use + staging) <= share);             // the graphs' memory is in use by now, and it fits
    REQUIRE(double(*s->in_use + staging + per_block) > share);  // one more block would not
  }
  const int fewer = eager.model->num_blocks() - graphs.model->num_blocks();
  REQUIRE(fewer >= 4 * graph_bytes / per_block);
  REQUIRE(fewer <= 4 * graph_bytes / per_block + 1);

  // The graphs were captured again over the cache sized last: a one-sequence decode replays one.
  ForwardBatch b;
  b.token_ids = {7}, b.positions = {0}, b.token_seq = {0},
  b.slot_mapping = {int64_t(graphs.model->num_blocks() - 1) * c.block_size};
  b.block_tables = {graphs.model->num_blocks() - 1}, b.max_blocks_per_seq = 1, b.logits_indices = {0};
  std::vector<float> replayed, ran;
  REQUIRE(graphs.model->forward(b, replayed));
  REQUIRE_FALSE(eager.model->forward(b, ran));
  REQUIRE(replayed == ran);
  REQUIRE_THROWS_WITH(sized(8, 0.01), Catch::Contains("leaves no room for KV blocks"));
}
