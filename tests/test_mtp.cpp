// Multi-token prediction: a GGUF's nextn block loads and round-trips; the head's wiring is
// checked with hand-set weights (it drafts what the embedding alone, or the hidden state alone, predicts);
// drafts after catching up on rejections equal drafts from scratch; and exact verification with MTP drafts
// gives the token ids and logprobs speculation off gives, async or not, chunked, preempting.
#include <catch2/catch.hpp>

#include <algorithm>

#include "engine/mtp_proposer.hpp"
#include "engine_core_runs.hpp"
#include "model/convert.hpp"
#include "model/random_model.hpp"

namespace parley {
namespace {

LlamaConfig mtp_config() {
  LlamaConfig c = builtin_model_config();
  c.max_seq_len = 256;
  return c;
}

// How the head is wired for a test: random, or one input passed straight through to the shared head.
enum class Head { Random, EmbeddingOnly, HiddenOnly };

ModelFile mtp_model(Head head) {
  ModelFile m = make_random_model(mtp_config(), 41, true);
  const size_t dim = size_t(m.config.dim);
  MtpWeights& w = *m.weights.mtp;
  if (head != Head::Random) {
    std::fill(w.eh_proj.begin(), w.eh_proj.end(), 0.0f);  // [dim][2 * dim]: pick one half
    for (size_t i = 0; i < dim; ++i) w.eh_proj[i * 2 * dim + i + (head == Head::HiddenOnly ? dim : 0)] = 1.0f;
    std::fill(w.layer.wo.begin(), w.layer.wo.end(), 0.0f);  // the block adds nothing to the residual
    std::fill(w.layer.w_down.begin(), w.layer.w_down.end(), 0.0f);
  }
  return m;
}

struct Target {
  cpu::CpuBackend backend{1};
  ModelFile file;
  LlamaModel model;
  KvCache kv;
  std::vector<int> blocks;
  explicit Target(Head head)
      : file(mtp_model(head)), model(file.config, file.weights, backend), kv(file.config, 16, 16) {
    for (int b = 0; b < 16; ++b) blocks.push_back(15 - b);
  }
  // The target's pass over tokens [0, n): its hidden states, and the greedy token after them.
  std::pair<std::vector<float>, int> run(const std::vector<int>& tokens) {
    ForwardBatch f;
    f.max_blocks_per_seq = int(blocks.size());
    f.block_tables = blocks;
    for (int p = 0; p < int(tokens.size()); ++p) {
      f.token_ids.push_back(tokens[size_t(p)]);
      f.positions.push_back(p);
      f.token_seq.push_back(0);
      f.slot_mapping.push_back(int64_t(blocks[size_t(p / 16)]) * 16 + p % 16);
    }
    f.logits_indices = {int(tokens.size()) - 1};
    std::vector<float> logits;
    model.forward(f, kv, logits);
    const auto h = model.hidden_states();
    return {std::vector<float>(h.begin(), h.end()),
            int(std::max_element(logits.begin(), logits.end()) - logits.begin())};
  }
};

std::vector<int> some_tokens(int n) {
  std::vector<int> t = {1};
  for (int i = 1; i < n; ++i) t.push_back(int((i * 37 + 11) % 500) + 5);
  return t;
}

}  // namespace

TEST_CASE("mtp: the nextn block round-trips through GGUF", "[spec][mtp]") {
  test::TempDir dir;
  const ModelFile m = mtp_model(Head::Random);
  write_model_gguf(m, dir / "mtp.gguf", GgmlType::F32);
  const ModelFile back = load_model_file(dir / "mtp.gguf");
  REQUIRE(back.config.n_layers == m.config.n_layers);
  REQUIRE(back.weights.mtp.has_value());
  REQUIRE(back.weights.mtp->eh_proj == m.weights.mtp->eh_proj);
  REQUIRE(back.weights.mtp->layer.w_up == m.weights.mtp->layer.w_up);
  REQUIRE(back.weights.mtp->shared_head_norm == m.weights.mtp->shared_head_norm);
  REQUIRE(back.weights.layers.back().wq == m.weights.layers.back().wq);
  REQUIRE_FALSE(load_model_file(test::shared_model("stories260K.gguf")).weights.mtp.has_value());
}

TEST_CASE("mtp: the head reads the next token's embedding and the hidden state at its position", "[spec][mtp]") {
  for (const Head head : {Head::EmbeddingOnly, Head::HiddenOnly}) {
    CAPTURE(int(head));
    Target t(head);
    std::vector<int> context = some_tokens(21);
    const auto [hidden, next] = t.run(context);
    const int sampled = (next + 7) % t.file.config.vocab_size;  // a sampled newest token, not the greedy one
    context.push_back(sampled);
    MtpProposer mtp(t.model, t.kv, 3, 256);
    mtp.observe_hidden("r", 0, hidden);
    const DraftInput input{"r", context, t.blocks};
    const std::vector<int> drafts = mtp.propose({&input, 1}).at(0);
    REQUIRE(drafts.size() == 3);
    // The block and projection pass one input through to the tied head (norms of weight 1), so the head
    // predicts what that input alone predicts.
    const auto& emb = t.file.weights.token_embedding;
    const size_t dim = size_t(t.file.config.dim);
    auto nearest = [&](const float* x) {  // argmax over tokens of embedding . x
      int best = 0;
      float best_dot = -1e30f;
      for (int v = 0; v < t.file.config.vocab_size; ++v) {
        float dot = 0;
        for (size_t d = 0; d < dim; ++d) dot += emb[size_t(v) * dim + d] * x[d];
        if (dot > best_dot) best_dot = dot, best = v;
      }
      return best;
    };
    if (head == Head::HiddenOnly) {
      // From the target's hidden state before the newest token: the target's own greedy prediction there.
      REQUIRE(drafts[0] == next);
      REQUIRE(drafts[0] != sampled);
      REQUIRE(drafts[1] == drafts[0]);  // then from the head's hidden state, which is that same state
    } else {
      int expected = context.back();
      for (int d : drafts) {
        expected = nearest(emb.data() + size_t(expected) * dim);
        REQUIRE(d == expected);
      }
    }
  }
}

TEST_CASE("mtp: drafts after catching up equal drafts from scratch", "[spec][mtp]") {
  Target t(Head::Random);
  std::vector<int> context = some_tokens(40);
  const auto [hidden, next] = t.run(context);  // hidden states of every position, as the steps computed them
  (void)next;
  const size_t dim = size_t(t.file.config.dim);
  MtpProposer kept(t.model, t.kv, 4, 256);
  int computed = 0;
  // Steps compute 9, then 3, 1, 4, 2, ... positions; verification reveals the next token each time.
  for (int L : {10, 13, 14, 18, 20, 21, 25, 30, 31, 40}) {
    CAPTURE(L);
    kept.observe_hidden("r", computed,
                        std::span<const float>(hidden).subspan(size_t(computed) * dim, size_t(L - 1 - computed) * dim));
    computed = L - 1;
    const std::vector<int> prefix(context.begin(), context.begin() + L);
    const DraftInput input{"r", prefix, t.blocks};
    const std::vector<int> drafts = kept.propose({&input, 1}).at(0);
    MtpProposer fresh(t.model, t.kv, 4, 256);
    fresh.observe_hidden("r", 0, std::span<const float>(hidden).subspan(0, size_t(L - 1) * dim));
    REQUIRE(fresh.propose({&input, 1}).at(0) == drafts);
    REQUIRE(drafts.size() == 4);
  }
}

TEST_CASE("mtp: exact verification changes no token", "[spec][mtp][model]") {
  cpu::CpuBackend backend(2);
  const ModelFile file = mtp_model(Head::HiddenOnly);  // drafts the target's last prediction again: some stand
  LlamaModel model(file.config, file.weights, backend);
  const Tokenizer tok(*file.vocab);
  const auto reqs = test::mixed_requests(tok, {"the cat sat on the mat and the dog", "one two three one two three one",
                                               "a b c d e f g h i j k l m n o p", "hello"});
  SchedulerConfig big;
  big.max_model_len = file.config.max_seq_len;
  big.num_kv_blocks = 256;
  big.eos_token_ids = {file.vocab->eos_id};
  big.vocab_size = file.config.vocab_size;
  SchedulerConfig chunked = big;
  chunked.long_prefill_token_threshold = 5;
  SchedulerConfig small = big;
  small.num_kv_blocks = 12;
  for (const SchedulerConfig& c : {big, chunked, small}) {
    const test::CoreRun off = test::run_core(model, reqs, c, false);
    for (const int k : {1, 3})
      for (const bool async_scheduling : {false, true}) {
        CAPTURE(c.num_kv_blocks, c.long_prefill_token_threshold, k, async_scheduling);
        const auto spec =
            SpeculativeConfig::parse(R"({"method": "mtp", "num_speculative_tokens": )" + std::to_string(k) + "}");
        const test::CoreRun on = test::run_core(model, reqs, c, async_scheduling, spec);
        test::require_same_outputs(on, off);
        REQUIRE(on.stats.spec_num_accepted_tokens > 0);
        REQUIRE(on.stats.num_uniform_decode_steps == on.stats.num_decode_steps);
        if (c.num_kv_blocks == 12) REQUIRE(on.stats.num_preemptions > 0);
      }
  }
}

}  // namespace parley
