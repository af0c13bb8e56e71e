// What the pooling tests (embeddings, reranking, encoders) share: a small scheduler config, deterministic prompts,
// running an engine to its end, and one plain forward pass's hidden states.
#pragma once
#include <catch2/catch.hpp>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "engine/engine_core.hpp"
#include "engine/scheduler.hpp"
#include "model/llama.hpp"
#include "model/model_shapes.hpp"
#include "model/random_model.hpp"

namespace parley::pooling_test {

inline SchedulerConfig scheduler_config(PoolingType type, int budget = 512) {
  SchedulerConfig c;
  c.max_model_len = 512;
  c.max_num_batched_tokens = budget;
  c.num_kv_blocks = 64;
  c.block_size = 16;
  c.pooling = type;
  return c;
}

// A tiny random model of an architecture (model_shapes' tiny row) that pools as `type`, with its CPU model.
struct Model {
  explicit Model(const std::string& arch, PoolingType type, uint64_t seed = 5)
      : file(make_random_model(config_of(arch, type), seed)), backend(1), model(file.config, file.weights, backend) {}
  static LlamaConfig config_of(const std::string& arch, PoolingType type) {
    LlamaConfig c = tiny_arch_shape(arch).config;
    c.pooling = type;
    return c;
  }
  ModelFile file;
  cpu::CpuBackend backend;
  LlamaModel model;
};

inline std::vector<int> prompt_of(int n, int seed) {
  std::vector<int> p(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) p[size_t(i)] = 1 + (seed * 131 + i * 37) % 500;
  return p;
}

inline Request pooling_request(const std::string& id, std::vector<int> prompt, PoolingParams params = {}) {
  Request r(id, std::move(prompt), SamplingParams{}, 0);
  r.pooling_params = params;
  return r;
}

// Runs every request to its end; returns each pooling request's vector by id (generation requests run beside them).
inline std::map<std::string, std::vector<float>> run(EngineCore& core, std::vector<Request> requests) {
  for (Request& r : requests) core.add_request(std::move(r));
  std::map<std::string, std::vector<float>> vectors;
  for (int steps = 0; core.has_unfinished_requests(); ++steps) {
    REQUIRE(steps < 1000);
    for (const EngineCoreOutput& o : core.step()) {
      REQUIRE(o.error.empty());
      if (!o.pooled.empty()) {
        CHECK(o.finish_reason == FinishReason::Stop);
        CHECK(o.new_token_ids.empty());
        vectors[o.req_id] = o.pooled;
      }
    }
  }
  return vectors;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The prompt's final-normed hidden states at `indices` (every token when empty) from one plain forward pass.
inline std::vector<float> normed_hidden(LlamaModel& model, const std::vector<int>& prompt,
                                        std::vector<int> indices = {}) {
  KvCache kv(model.config(), 64, 16);
  ForwardBatch b;
  b.max_blocks_per_seq = 64;
  for (int i = 0; i < 64; ++i) b.block_tables.push_back(i);
  for (int p = 0; p < int(prompt.size()); ++p) {
    b.token_ids.push_back(prompt[size_t(p)]);
    b.positions.push_back(p);
    b.token_seq.push_back(0);
    b.slot_mapping.push_back(p);
    if (indices.empty()) b.hidden_indices.push_back(p);
  }
  if (!indices.empty()) b.hidden_indices = std::move(indices);
  std::vector<float> logits;
  model.forward(b, kv, logits);
  const auto h = model.normed_hidden_states();
  return {h.begin(), h.end()};
}

}  // namespace parley::pooling_test
