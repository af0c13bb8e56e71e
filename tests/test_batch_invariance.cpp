// Batch invariance: a sequence's tokens and logits never depend on its batch company, on how its prompt
// was chunked, or on the thread count.
#include <catch2/catch.hpp>

#include <cstring>

#include "model/tokenizer.hpp"
#include "tests/test_support.hpp"

using namespace parley;
using namespace parley::test;

namespace {

const char* kPrompts[16] = {
    "Once upon a time",
    "Lily and Tom",
    "The cat sat on the mat",
    "One day, a little dog",
    "Tim had a red ball",
    "The sun was hot",
    "Sue liked to sing",
    "A big tree grew",
    "Mom said no",
    "The bird flew up high in the sky and",
    "Ben found a box",
    "It was a rainy day",
    "The fish swam",
    "Anna wanted a cake",
    "Max and his friend Sam went to the park to play",
    "Z",
};

std::vector<GenerationRequest> sixteen_requests(const Tokenizer& tok) {
  std::vector<GenerationRequest> reqs;
  for (int i = 0; i < 16; ++i) {
    GenerationRequest r{tok.encode(kPrompts[i], true), {}};
    r.params.temperature = (i % 2) ? 0.8f : 0.0f;  // greedy and seeded sampling side by side
    r.params.top_p = (i % 4 == 1) ? 0.9f : 1.0f;
    r.params.seed = 1000 + i;
    r.params.max_tokens = 24 + 5 * i;
    reqs.push_back(r);
  }
  return reqs;
}

// Runs a prompt through the model in chunks and returns the logits of every position, concatenated.
std::vector<float> chunked_logits(Loaded& m, const std::vector<int>& prompt, int chunk) {
  const int bs = 16, num_blocks = 64;
  KvCache kv(m.file.config, num_blocks, bs);
  std::vector<float> all, logits;
  for (int start = 0; start < int(prompt.size()); start += chunk) {
    ForwardBatch b;
    const int end = std::min<int>(prompt.size(), start + chunk);
    b.max_blocks_per_seq = num_blocks;
    for (int i = 0; i < num_blocks; ++i) b.block_tables.push_back(num_blocks - 1 - i);  // scattered blocks
    for (int p = start; p < end; ++p) {
      b.token_ids.push_back(prompt[p]);
      b.positions.push_back(p);
      b.token_seq.push_back(0);
      b.slot_mapping.push_back(int64_t(b.block_tables[p / bs]) * bs + p % bs);
      b.logits_indices.push_back(p - start);
    }
    m.model.forward(b, kv, logits);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

}  // namespace

TEST_CASE("16 prompts generated together equal each generated alone", "[invariance]") {
  Loaded m(shared_model("stories260K.bin"), shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const auto reqs = sixteen_requests(tok);
  OfflineEngine engine(m.model, m.engine_options());
  const auto together = engine.generate(reqs);
  for (size_t i = 0; i < reqs.size(); ++i) {
    INFO("prompt " << i << " '" << kPrompts[i] << "'");
    const auto alone = engine.generate({reqs[i]})[0];
    REQUIRE(alone.output_token_ids == together[i].output_token_ids);
    REQUIRE(alone.finish == together[i].finish);
  }
  REQUIRE(engine.block_pool().num_used() == 0);
}

TEST_CASE("chunked prefill and token budgets leave tokens unchanged", "[invariance]") {
  Loaded m(shared_model("stories260K.gguf"), "");
  const Tokenizer tok(*m.file.vocab);
  const auto reqs = sixteen_requests(tok);
  EngineOptions base = m.engine_options();
  const auto reference = OfflineEngine(m.model, base).generate(reqs);
  for (int chunk : {1, 7, 64}) {
    EngineOptions o = base;
    o.long_prefill_token_threshold = chunk;
    o.max_num_batched_tokens = chunk == 1 ? 9 : 100;  // forces mixed prefill/decode steps and waiting
    OfflineEngine engine(m.model, o);
    const auto got = engine.generate(reqs);
    for (size_t i = 0; i < reqs.size(); ++i) REQUIRE(got[i].output_token_ids == reference[i].output_token_ids);
    REQUIRE(engine.block_pool().num_used() == 0);
  }
}

TEST_CASE("prefill in chunks of 1, 7 and 64 gives bit-identical logits", "[invariance]") {
  for (const char* model : {"stories260K.bin", ""}) {
    Loaded m(*model ? shared_model(model) : "", *model ? shared_model("tok512.bin") : "");
    std::vector<int> prompt{m.file.vocab->bos_id};
    for (int i = 0; i < 150; ++i) prompt.push_back(3 + (i * 37) % (m.file.config.vocab_size - 3));
    const auto whole = chunked_logits(m, prompt, int(prompt.size()));
    REQUIRE(whole.size() == prompt.size() * size_t(m.file.config.vocab_size));
    for (int chunk : {1, 7, 64}) {
      INFO("model '" << model << "' chunk " << chunk);
      const auto got = chunked_logits(m, prompt, chunk);
      REQUIRE(got.size() == whole.size());
      REQUIRE(std::memcmp(got.data(), whole.data(), sizeof(float) * whole.size()) == 0);
    }
  }
}

TEST_CASE("thread count does not change tokens", "[invariance]") {
  Loaded one(shared_model("stories260K.bin"), shared_model("tok512.bin"), 1);
  Loaded three(shared_model("stories260K.bin"), shared_model("tok512.bin"), 3);
  const Tokenizer tok(*one.file.vocab);
  const auto reqs = sixteen_requests(tok);
  const auto a = OfflineEngine(one.model, one.engine_options()).generate(reqs);
  const auto b = OfflineEngine(three.model, three.engine_options()).generate(reqs);
  for (size_t i = 0; i < reqs.size(); ++i) REQUIRE(a[i].output_token_ids == b[i].output_token_ids);
}

TEST_CASE("a KV pool too small for everyone runs requests in waves with the same tokens", "[invariance]") {
  Loaded m(shared_model("stories260K.bin"), shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const auto reqs = sixteen_requests(tok);
  const auto reference = OfflineEngine(m.model, m.engine_options()).generate(reqs);
  EngineOptions small = m.engine_options();
  int largest = 0;
  for (const auto& r : reqs)
    largest = std::max<int>(largest, (r.prompt_token_ids.size() + r.params.max_tokens + 15) / 16);
  small.num_kv_blocks = largest + 1;  // room for one long request (and a short one) at a time
  OfflineEngine engine(m.model, small);
  const auto got = engine.generate(reqs);
  for (size_t i = 0; i < reqs.size(); ++i) REQUIRE(got[i].output_token_ids == reference[i].output_token_ids);
  REQUIRE(engine.block_pool().num_blocks() == largest + 1);
  REQUIRE(engine.block_pool().num_used() == 0);
  small.num_kv_blocks = largest - 1;
  OfflineEngine too_small(m.model, small);
  REQUIRE_THROWS_WITH(too_small.generate(reqs), Catch::Contains("KV blocks but the cache has"));
}
