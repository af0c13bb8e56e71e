// Speculative decoding through EngineCore on stories260K: n-gram drafts verified exactly
// give the token ids and logprobs speculation off gives, greedy and seeded, alone and batched, with n > 1,
// penalties, min_tokens and preemption, with async scheduling or not; with padding every decode step is
// uniform, without it not. Rejection verification is reproducible and exact for greedy rows.
#include <catch2/catch.hpp>

#include "engine/model_proposer.hpp"
#include "engine_core_runs.hpp"
#include "model/convert.hpp"
#include "model/random_model.hpp"

namespace parley {
namespace {

// Prompts that repeat themselves, so the n-gram proposer finds matches, besides stories260K's own loops.
std::vector<Request> spec_requests(const Tokenizer& tok) {
  return test::mixed_requests(
      tok, {"Once upon a time, there was a little girl named Lily. Once upon a time, there was a little",
            "The cat sat on the mat. The dog sat on the mat. The bird sat on the",
            "Tom had a red ball. Tom had a red ball. Tom had a", "One day, a big dog went to the park."});
}

SpeculativeConfig ngram(int k, bool pad = true) {
  return SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": )" + std::to_string(k) +
                                  R"(, "prompt_lookup_min": 2, "prompt_lookup_max": 4, "pad_uniform": )" +
                                  (pad ? "true" : "false") + "}");
}

}  // namespace

TEST_CASE("speculative decoding: exact n-gram verification changes no token", "[spec][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const auto reqs = spec_requests(tok);
  for (const SchedulerConfig& c : {test::model_scheduler_config(m, 256), test::model_scheduler_config(m, 10)}) {
    CAPTURE(c.num_kv_blocks);
    const test::CoreRun off = test::run_core(m.model, reqs, c, false);
    REQUIRE(off.tokens.size() == 11);
    for (const auto& [k, async_scheduling] :
         {std::pair{3, false}, std::pair{5, false}, std::pair{3, true}, std::pair{5, true}}) {
      CAPTURE(k, async_scheduling);
      const test::CoreRun on = test::run_core(m.model, reqs, c, async_scheduling, ngram(k));
      test::require_same_outputs(on, off);
      REQUIRE(on.stats.spec_num_draft_tokens > 0);
      REQUIRE(on.stats.spec_num_accepted_tokens > 0);
      REQUIRE(on.stats.spec_num_accepted_tokens <= on.stats.spec_num_draft_tokens);
      REQUIRE(on.stats.spec_num_accepted_per_pos.size() == size_t(k));
      REQUIRE(on.stats.spec_num_accepted_per_pos[0] >= on.stats.spec_num_accepted_per_pos[size_t(k - 1)]);
      if (c.num_kv_blocks == 256) REQUIRE(on.stats.num_steps < off.stats.num_steps);  // accepted drafts save steps
      // Padding: every decode step gives every request 1 + k query tokens.
      REQUIRE(on.stats.num_decode_steps > 0);
      REQUIRE(on.stats.num_uniform_decode_steps == on.stats.num_decode_steps);
      if (c.num_kv_blocks == 10) REQUIRE(on.stats.num_preemptions > 0);
    }
    // Without padding a request verifies only the drafts its proposer found: some decode steps are ragged.
    const test::CoreRun ragged = test::run_core(m.model, reqs, c, false, ngram(3, false));
    REQUIRE(ragged.tokens == off.tokens);
    REQUIRE(ragged.logprobs == off.logprobs);
    REQUIRE(ragged.stats.num_uniform_decode_steps < ragged.stats.num_decode_steps);
  }
}

TEST_CASE("speculative decoding: each request alone equals the batch", "[spec][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const SchedulerConfig c = test::model_scheduler_config(m, 256);
  const auto reqs = spec_requests(tok);
  const test::CoreRun together = test::run_core(m.model, reqs, c, false, ngram(4));
  for (const Request& r : reqs) {
    const test::CoreRun alone = test::run_core(m.model, {r}, c, false, ngram(4));
    for (const auto& [id, tokens] : alone.tokens) REQUIRE(together.tokens.at(id) == tokens);
  }
}

TEST_CASE("speculative decoding: drafting models change no token", "[spec][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const auto reqs = spec_requests(tok);
  // A draft with the target's vocabulary and random weights: its drafts are nearly all rejected.
  test::TempDir dir;
  LlamaConfig small = m.file.config;
  small.n_layers = 2;
  ModelFile noise = make_random_model(small, 5);
  noise.vocab = m.file.vocab;
  write_model_gguf(noise, dir / "noise.gguf", GgmlType::F32);
  const std::vector<std::string> configs = {
      R"({"method": "layer_skip", "num_speculative_tokens": 3, "draft_layers": 3})",
      R"({"method": "draft_model", "num_speculative_tokens": 4, "model": ")" + test::shared_model("stories260K.gguf") +
          "\"}",
      R"({"method": "draft_model", "num_speculative_tokens": 2, "model": ")" + dir / "noise.gguf" + "\"}"};
  for (const SchedulerConfig& c : {test::model_scheduler_config(m, 256), test::model_scheduler_config(m, 12)}) {
    const test::CoreRun off = test::run_core(m.model, reqs, c, false);
    for (const std::string& json : configs)
      for (const bool async_scheduling : {false, true}) {
        CAPTURE(c.num_kv_blocks, json, async_scheduling);
        const auto spec = SpeculativeConfig::parse(json);
        const test::CoreRun on = test::run_core(m.model, reqs, c, async_scheduling, spec, &*m.file.vocab);
        test::require_same_outputs(on, off);
        REQUIRE(on.stats.spec_num_draft_tokens > 0);
        REQUIRE(on.stats.num_uniform_decode_steps == on.stats.num_decode_steps);
        if (c.num_kv_blocks == 12) REQUIRE(on.stats.num_preemptions > 0);
        const double accepted = double(on.stats.spec_num_accepted_tokens) / double(on.stats.spec_num_draft_tokens);
        // The target itself as the draft agrees on every greedy row; random weights almost never do.
        if (json.find("stories260K.gguf") != std::string::npos) REQUIRE(accepted > 0.5);
        if (json.find("noise") != std::string::npos) REQUIRE(accepted < 0.2);
        if (json.find("layer_skip") != std::string::npos) REQUIRE((accepted > 0.05 && accepted < 0.95));
      }
  }
}

TEST_CASE("draft model proposer: drafts after catching up equal drafts from scratch", "[spec][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const auto spec = SpeculativeConfig::parse(R"({"method": "draft_model", "num_speculative_tokens": 4, "model": ")" +
                                             test::shared_model("stories260K.gguf") + "\"}");
  KvCache kv(m.model.config(), 32, 16);
  std::vector<int> blocks(32);
  for (int i = 0; i < 32; ++i) blocks[size_t(i)] = 31 - i;
  const std::vector<int> prompt = tok.encode("Once upon a time, there was a little girl named Lily.", true);
  // Grow the context as verification would: some drafts kept, then the target's own token.
  auto kept = make_proposer(spec, {&m.model, &kv, 512});
  std::vector<int> context = prompt;
  for (int round = 0; round < 6; ++round) {
    CAPTURE(round);
    const DraftInput input{"r", context, blocks};
    const std::vector<int> drafts = kept->propose({&input, 1}).at(0);
    KvCache fresh_kv(m.model.config(), 32, 16);
    auto fresh = make_proposer(spec, {&m.model, &fresh_kv, 512});
    REQUIRE(fresh->propose({&input, 1}).at(0) == drafts);
    REQUIRE(drafts.size() == 4);
    const size_t keep = size_t(round % 5);  // 0..4 drafts stand, then one more token
    context.insert(context.end(), drafts.begin(), drafts.begin() + long(std::min(keep, drafts.size())));
    context.push_back(keep == 1 ? 7 : drafts[0]);
  }
}

TEST_CASE("speculative decoding: configurations that cannot run are refused", "[spec]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const SchedulerConfig c = test::model_scheduler_config(m, 16);
  const Vocab* vocab = &*m.file.vocab;
  auto refused = [&](const std::string& json) {
    try {
      EngineCore(m.model, c, false, SpeculativeConfig::parse(json), vocab);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  test::TempDir dir;
  ModelFile other = make_random_model(builtin_model_config(), 3);  // 512 tokens, another vocabulary
  write_model_gguf(other, dir / "other.gguf", GgmlType::F32);
  LlamaConfig wide = builtin_model_config();
  wide.vocab_size = 600;
  write_model_gguf(make_random_model(wide, 3), dir / "wide.gguf", GgmlType::F32);
  const std::string draft = R"({"method": "draft_model", "num_speculative_tokens": 3, "model": ")";
  REQUIRE_THAT(refused(draft + dir / "missing.gguf\"}"), Catch::Contains("draft model: cannot open model file"));
  REQUIRE_THAT(refused(draft + dir / "wide.gguf\"}"),
               Catch::Contains("has a vocabulary of 600 tokens, the target's has 512"));
  REQUIRE_THAT(refused(draft + dir / "other.gguf\"}"), Catch::Contains("has another vocabulary: token "));
  REQUIRE_THAT(refused(R"({"method": "layer_skip", "num_speculative_tokens": 3, "draft_layers": 5})"),
               Catch::Contains("draft_layers must be below the target's 5 layers, got 5"));
  REQUIRE_THAT(refused(R"({"method": "mtp", "num_speculative_tokens": 1})"),
               Catch::Contains("method mtp needs a multi-token-prediction head"));
}

TEST_CASE("speculative decoding: rejection verification on stories260K", "[spec][model]") {
  test::Loaded m(test::shared_model("stories260K.bin"), test::shared_model("tok512.bin"));
  const Tokenizer tok(*m.file.vocab);
  const SchedulerConfig c = test::model_scheduler_config(m, 256);
  const auto reqs = spec_requests(tok);
  const auto rejection = SpeculativeConfig::parse(
      R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2, "verify": "rejection"})");
  const test::CoreRun off = test::run_core(m.model, reqs, c, false);
  const test::CoreRun a = test::run_core(m.model, reqs, c, false, rejection);
  const test::CoreRun b = test::run_core(m.model, reqs, c, true, rejection);
  // Reproducible: draws are keyed by (seed, position), so the same requests give the same tokens, async or not.
  REQUIRE(a.tokens == b.tokens);
  REQUIRE(a.logprobs == b.logprobs);
  REQUIRE(a.stats.spec_num_accepted_tokens > 0);
  int sampled_rows_differ = 0;
  for (const Request& r : reqs) {
    const bool greedy = r.sampling_params.temperature == 0.0f;
    for (const std::string& id : r.child_req_ids.empty() ? std::vector<std::string>{r.request_id} : r.child_req_ids) {
      CAPTURE(id);
      // A greedy row's target is one-hot: rejection sampling emits exactly what speculation off does.
      if (greedy)
        REQUIRE(a.tokens.at(id) == off.tokens.at(id));
      else
        sampled_rows_differ += a.tokens.at(id) != off.tokens.at(id);
      REQUIRE(a.finish.count(id));
      const auto lp = a.logprobs.find(id);
      REQUIRE((lp == a.logprobs.end() ? 0 : lp->second.size()) ==
              (r.sampling_params.logprobs ? a.tokens.at(id).size() : 0));
    }
  }
  // Sampled rows follow the same distribution with other draws (the unit test checks the distribution).
  REQUIRE(sampled_rows_differ > 0);
}

}  // namespace parley
