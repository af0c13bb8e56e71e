// Models in ggml's weight types through the engine: the quantized matmuls are batch-invariant, so every
// differential suite (PD's prefill and decode instances too) gives the ids of a plain run; the logits stay close to
// those of the same weights decoded and run in F32; the weights stay resident in their types; stories260K runs at Q8_0
// end to end; the CUDA path (host emulation) decodes them at load.
#include <catch2/catch.hpp>

#include <cmath>

#include "differential_suite.hpp"
#include "host_device_ops.hpp"
#include "kernels/cpu/quant_matrix.hpp"
#include "model/cuda/device_llama.hpp"
#include "model/convert.hpp"
#include "model/linear.hpp"
#include "model/model_shapes.hpp"
#include "kernels/quant/quantize.hpp"
#include "model/random_model.hpp"
#include "model_test_util.hpp"
#include "pd_pair.hpp"

namespace parley {
namespace {

using quant::GgmlType;

// Rows of 256 everywhere but wo's (q_dim 128): every K-quant applies, and wo falls back as a file would have it.
LlamaConfig kquant_config() {
  LlamaConfig c = tiny_arch_shape("llama").config;
  c.dim = 256, c.hidden_dim = 512;
  return c;
}

WeightMatrix quantized(const WeightMatrix& m, GgmlType type, int64_t cols) {
  if (cols % quant::traits(type).block_size != 0) type = GgmlType::F16;
  const std::vector<float> v = m.to_f32();
  const int64_t rows = int64_t(v.size()) / cols;
  std::vector<uint8_t> bytes(quant::row_bytes(type, cols) * size_t(rows));
  quant::quantize_chunk(type, v.data(), bytes.data(), 0, rows, cols);
  return WeightMatrix::from_blocks(type, rows, cols, std::move(bytes));
}

// A random model with every matrix in `type`, except attn_v and ffn_down in `more` (as Q4_K_M files mix them).
ModelFile quantized_model(const LlamaConfig& cfg, GgmlType type, GgmlType more) {
  const ModelShape shape = tiny_arch_shape("llama");
  ModelFile m = make_random_model(cfg, 7, false, std::nullopt, shape.rope_factors);
  const int64_t dim = cfg.dim, qd = cfg.q_dim(), hidden = cfg.hidden_dim;
  m.weights.token_embedding = quantized(m.weights.token_embedding, type, dim);
  m.weights.output = quantized(m.weights.output_head(), more, dim);
  for (LayerWeights& l : m.weights.layers) {
    for (WeightMatrix* w : {&l.wq, &l.wk, &l.w_gate, &l.w_up}) *w = quantized(*w, type, dim);
    l.wv = quantized(l.wv, more, dim);
    l.wo = quantized(l.wo, type, qd);
    l.w_down = quantized(l.w_down, more, hidden);
  }
  return m;
}

ModelFile decoded(ModelFile m) {
  m.weights.token_embedding = m.weights.token_embedding.to_f32();
  m.weights.output = m.weights.output.to_f32();
  for (LayerWeights& l : m.weights.layers)
    for (WeightMatrix* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) *w = w->to_f32();
  return m;
}

std::vector<float> all_logits(LlamaModel& model, int n) {
  std::vector<int> tokens{1};
  for (int i = 1; i < n; ++i) tokens.push_back(3 + (i * 37) % 500);
  KvCache kv(model.config(), 8, 16);
  ForwardBatch b;
  b.token_ids = tokens, b.max_blocks_per_seq = 8;
  for (int i = 0; i < 8; ++i) b.block_tables.push_back(i);
  for (int p = 0; p < n; ++p)
    b.positions.push_back(p), b.token_seq.push_back(0), b.slot_mapping.push_back(p), b.logits_indices.push_back(p);
  std::vector<float> logits;
  model.forward(b, kv, logits);
  return logits;
}

struct Case {
  GgmlType type, more;
  bool k_rows;  // the 256-row config
};
// Measured max |d logprob| over every vocabulary entry of 100 positions: 0.033 (q8_0), 0.050 (q4_0), 0.037 (q5_1),
// 0.034 (q4_K), 0.033 (q5_K): the activations' 8-bit rounding; f16/bf16 weights: exactly 0.
constexpr double kMaxLogprobError = 0.1;
const Case kCases[] = {{GgmlType::Q8_0, GgmlType::Q8_0, false}, {GgmlType::Q4_0, GgmlType::Q8_0, false},
                       {GgmlType::Q5_1, GgmlType::Q4_1, false}, {GgmlType::Q4_K, GgmlType::Q6_K, true},
                       {GgmlType::Q5_K, GgmlType::Q6_K, true},  {GgmlType::F16, GgmlType::BF16, false}};

}  // namespace

TEST_CASE("quantized models: batching, chunking, prefix hits, preemption, speculation, async and PD change no token",
          "[quant-model]") {
  const cpu::CpuBackend backend(2);
  for (const Case& k : kCases) {
    CAPTURE(quant::traits(k.type).name, quant::traits(k.more).name);
    const ModelFile file =
        quantized_model(k.k_rows ? kquant_config() : tiny_arch_shape("llama").config, k.type, k.more);
    LlamaModel model(file.config, file.weights, backend);
    test::require_differential_suite(model, file);
    // Prefill on one instance, decode on another: the quantized KV producer and consumer agree with colocated.
    const Tokenizer tok(*file.vocab);
    const auto reqs = test::arch_requests(tok);
    const SchedulerConfig c = test::suite_config(file, 256, true);
    test::PdPair pd(model, c);
    test::require_same_outputs(pd.run(reqs), test::run_core(model, reqs, c, false));
    REQUIRE(pd.transfers == int64_t(reqs.size()));
  }
}

// AMX and AVX-512 differ only in the quantized matmul (tiles or VNNI), which gives the same bits: so must the whole
// engine. (Other ISAs have other vector kernels around the matmul, whose float bits may differ.)
TEST_CASE("quantized models give the same token ids and logprobs with AMX tiles on and off", "[quant-model]") {
  if (!cpu::isa_supported(cpu::Isa::Amx)) {
    WARN("skipped: this CPU (or Linux) gives no AMX tiles");
    return;
  }
  for (const Case& k : kCases) {
    CAPTURE(quant::traits(k.type).name, quant::traits(k.more).name);
    const ModelFile file =
        quantized_model(k.k_rows ? kquant_config() : tiny_arch_shape("llama").config, k.type, k.more);
    const Tokenizer tok(*file.vocab);
    const auto reqs = test::arch_requests(tok);
    const SchedulerConfig c = test::suite_config(file, 256, true);
    const cpu::CpuBackend tiles(2, cpu::Isa::Amx), vnni(2, cpu::Isa::Avx512);
    REQUIRE(cpu::quant_isa_for(tiles.isa()) == cpu::QuantIsa::Amx);
    REQUIRE(cpu::quant_isa_for(vnni.isa()) != cpu::QuantIsa::Amx);
    LlamaModel on(file.config, file.weights, tiles), off(file.config, file.weights, vnni);
    // A batch of 12 prefilled together (hundreds of rows: the tile paths), async, an n = 3 split.
    test::require_same_outputs(test::run_core(on, reqs, c, true), test::run_core(off, reqs, c, true));
    if (k.k_rows) test::require_differential_suite(off, file);  // the suites with the tiles off (on: the case above)
  }
}

TEST_CASE("q8_0 weights are packed for the kernels of the ISA in use, with the same products either way",
          "[quant-model]") {
  const WeightMatrix m = quantized(make_random_model(kquant_config(), 3).weights.layers[0].wq, GgmlType::Q8_0, 256);
  const std::vector<float> x = make_random_model(kquant_config(), 4).weights.layers[0].wq.to_f32();  // 256 a row
  std::vector<float> scratch, outs[2];
  const cpu::QuantIsa isas[2] = {cpu::QuantIsa::Avx2, cpu::quant_isa_for(cpu::Isa::Auto)};
  for (int i = 0; i < 2; ++i) {
    WeightMatrix copy = m;
    const Linear l = Linear::stack(256, {&copy}, isas[i]);
    CHECK(l.packed_biased() == (isas[i] == cpu::QuantIsa::Avx512Vnni || isas[i] == cpu::QuantIsa::Amx));
    outs[i].resize(size_t(l.N()) * 20);
    l.matmul(cpu::CpuBackend(2), x.data(), outs[i].data(), 20, scratch);
  }
  CHECK(outs[0] == outs[1]);
}

TEST_CASE("quantized models stay close to their weights decoded to F32, and stay resident in their types",
          "[quant-model]") {
  const cpu::CpuBackend backend(2);
  for (const Case& k : kCases) {
    CAPTURE(quant::traits(k.type).name, quant::traits(k.more).name);
    const LlamaConfig cfg = k.k_rows ? kquant_config() : tiny_arch_shape("llama").config;
    const ModelFile file = quantized_model(cfg, k.type, k.more);
    LlamaModel q(file.config, file.weights, backend);
    LlamaModel f(cfg, decoded(file).weights, backend);
    const int n = 100, vocab = cfg.vocab_size;
    const std::vector<float> lq = all_logits(q, n), lf = all_logits(f, n);
    double worst = 0;
    int same_top = 0;
    for (int p = 0; p < n; ++p) {
      auto logprobs = [&](const std::vector<float>& l) {
        const float* row = l.data() + size_t(p) * vocab;
        double m = row[0], z = 0;
        for (int i = 0; i < vocab; ++i) m = std::max(m, double(row[i]));
        for (int i = 0; i < vocab; ++i) z += std::exp(row[i] - m);
        std::vector<double> out(static_cast<size_t>(vocab));
        for (int i = 0; i < vocab; ++i) out[size_t(i)] = row[i] - m - std::log(z);
        return out;
      };
      const auto a = logprobs(lq), b = logprobs(lf);
      for (int i = 0; i < vocab; ++i) worst = std::max(worst, std::abs(a[size_t(i)] - b[size_t(i)]));
      same_top += std::max_element(a.begin(), a.end()) - a.begin() == std::max_element(b.begin(), b.end()) - b.begin();
    }
    INFO("max |d logprob| " << worst << ", same top-1 at " << same_top << " of " << n);
    CHECK(worst < kMaxLogprobError);
    // Quantized activations move the logits a little; F16/BF16 weights decode exactly and sum in the F32 order.
    CHECK((worst > 0) == (k.type != GgmlType::F16));
    CHECK(same_top >= n * 9 / 10);
    // Resident: the quantized matrices take their blocks' bytes (plus at most the kernels' 3%), not floats.
    CHECK(q.weight_bytes() < f.weight_bytes() / (k.type == GgmlType::F16 ? 1.9 : 3.0));
  }
}

TEST_CASE("stories260K at Q8_0 through the whole engine", "[quant-model]") {
  parley_test::TempDir dir;
  const std::string path = dir / "stories260K.q8_0.gguf";
  convert_llama2c(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"), path, GgmlType::Q8_0);
  const ModelFile file = load_model_file(path);
  REQUIRE(file.weights.layers[0].wq.type() == GgmlType::Q8_0);
  REQUIRE(file.weights.layers[0].w_down.type() == GgmlType::F16);  // rows of 172: F16, as llama.cpp falls back
  const cpu::CpuBackend backend(2);
  LlamaModel model(file.config, file.weights, backend);
  test::require_differential_suite(model, file);
  // The greedy story is llama2.c's for its first tokens at least (the F32 weights' reference).
  const auto refs = test::greedy_references();
  const auto reqs = test::greedy_reference_requests();
  const test::CoreRun run = test::run_core(model, reqs, test::suite_config(file, 256, false), false);
  const std::vector<int>& got = run.tokens.at("r0");
  const std::vector<int>& want = refs[0].output_ids;
  size_t agree = 0;
  while (agree < std::min(got.size(), want.size()) && got[agree] == want[agree]) ++agree;
  INFO("agrees with llama2.c's F32 ids for " << agree << " of " << want.size() << " tokens");
  CHECK(agree >= 20);
}

TEST_CASE("the CUDA model path (host emulation) decodes quantized weights at load", "[quant-model][cuda-host]") {
  const cpu::CpuBackend backend(2);
  for (const Case& k : kCases) {
    CAPTURE(quant::traits(k.type).name, quant::traits(k.more).name);
    const LlamaConfig cfg = k.k_rows ? kquant_config() : tiny_arch_shape("llama").config;
    const ModelFile file = quantized_model(cfg, k.type, k.more);
    const SchedulerConfig c = test::suite_config(file, 16, false);
    cuda::DeviceLlama<test::HostOps> device(std::make_unique<test::HostOps>(), file.config, file.weights,
                                            test::device_options(c, 0));
    LlamaModel f(cfg, decoded(file).weights, backend);
    ForwardBatch b;
    for (int p = 0; p < 40; ++p)
      b.token_ids.push_back(3 + p * 11 % 500), b.positions.push_back(p), b.token_seq.push_back(0),
          b.slot_mapping.push_back(p), b.logits_indices.push_back(p);
    b.max_blocks_per_seq = 3, b.block_tables = {0, 1, 2};
    std::vector<float> got, want;
    device.forward(b, got);
    KvCache kv(cfg, 16, c.block_size);
    f.forward(b, kv, want);
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    CHECK(worst < 1e-4);  // the decoded weights in F32: the reference GEMM's rounding only
  }
}

}  // namespace parley
