// The persistent input batch: rows added into holes, removed and condensed in place with their data
// intact, flags derived from request sets, and sampling metadata rebuilt only when the batch changes.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/input_batch.hpp"

using namespace parley;

namespace {

// A request whose every field is derived from k, so a moved row can be checked field by field.
CachedRequestState make_request(int k) {
  CachedRequestState r;
  r.req_id = "req-" + std::to_string(k);
  r.prompt_token_ids = {k, k + 1, k + 2};
  r.output_token_ids = std::vector<int>(k % 3, 100 + k);
  r.sampling_params.temperature = 0.5f + 0.1f * float(k);
  r.sampling_params.top_k = k;
  r.sampling_params.seed = uint64_t(k);
  r.seed = 1000 + uint64_t(k);
  r.block_ids = {{10 * k, 10 * k + 1}};
  r.num_computed_tokens = k % 3;
  return r;
}

void require_row_holds(const InputBatch& b, const CachedRequestState& r) {
  INFO(r.req_id);
  const auto row = b.req_index(r.req_id);
  REQUIRE(row);
  REQUIRE(b.req_ids()[*row] == r.req_id);
  const CachedRequestState got = b.request_state(*row);
  REQUIRE(got.prompt_token_ids == r.prompt_token_ids);
  REQUIRE(got.output_token_ids == r.output_token_ids);
  REQUIRE(got.block_ids == r.block_ids);
  REQUIRE(got.num_computed_tokens == r.num_computed_tokens);
  REQUIRE(got.seed == r.seed);
  REQUIRE(got.sampling_params.temperature == r.sampling_params.temperature);
  REQUIRE(got.sampling_params.top_k == r.sampling_params.top_k);
}

}  // namespace

TEST_CASE("add fills the lowest hole, remove leaves one, condense moves the last rows in", "[input_batch]") {
  InputBatch b(8, 32, 4);
  std::vector<CachedRequestState> reqs;
  for (int k = 0; k < 6; ++k) reqs.push_back(make_request(k));
  for (int k = 0; k < 6; ++k) REQUIRE(b.add_request(reqs[k]) == k);
  REQUIRE(b.num_reqs() == 6);

  REQUIRE(b.remove_request("req-1") == 1);
  REQUIRE(b.remove_request("req-4") == 4);
  REQUIRE_FALSE(b.remove_request("req-4"));
  REQUIRE(b.num_reqs() == 4);
  REQUIRE(b.req_ids() == std::vector<std::string>{"req-0", "", "req-2", "req-3", "", "req-5"});

  // A new request takes the lowest hole.
  const CachedRequestState r6 = make_request(6);
  REQUIRE(b.add_request(r6) == 1);
  REQUIRE(b.req_ids() == std::vector<std::string>{"req-0", "req-6", "req-2", "req-3", "", "req-5"});

  b.remove_request("req-0");
  b.condense();  // holes 0 and 4: req-5 moves to 0, then hole 4 is past the last row
  REQUIRE(b.req_ids() == std::vector<std::string>{"req-5", "req-6", "req-2", "req-3"});
  REQUIRE(int(b.req_ids().size()) == b.num_reqs());
  for (const auto& r : {reqs[2], reqs[3], reqs[5], r6}) require_row_holds(b, r);
  REQUIRE_FALSE(b.req_index("req-0"));
  REQUIRE_FALSE(b.req_index("req-1"));

  // Removing the last rows leaves nothing to move.
  b.remove_request("req-3");
  b.remove_request("req-2");
  b.condense();
  REQUIRE(b.req_ids() == std::vector<std::string>{"req-5", "req-6"});
  require_row_holds(b, reqs[5]);
  require_row_holds(b, r6);
  b.remove_request("req-5");
  b.remove_request("req-6");
  b.condense();
  REQUIRE(b.req_ids().empty());
  REQUIRE(b.num_reqs() == 0);
}

TEST_CASE("per-step updates change one row and nothing else", "[input_batch]") {
  InputBatch b(4, 16, 3);
  CachedRequestState a = make_request(1), c = make_request(2);
  b.add_request(a);
  b.add_request(c);
  b.append_token(0, 77);
  b.append_block_ids(0, GroupBlockIds{{99}});
  b.set_num_computed_tokens(0, 4);
  a.output_token_ids.push_back(77);
  a.block_ids[0].push_back(99);
  a.num_computed_tokens = 4;
  require_row_holds(b, a);
  require_row_holds(b, c);
  REQUIRE(b.num_tokens(0) == 5);
  REQUIRE(b.num_prompt_tokens(0) == 3);
  // Rows have fixed capacity: 16 tokens, 3 blocks.
  REQUIRE_THROWS_AS(b.append_block_ids(0, GroupBlockIds{{1}}), std::logic_error);
  for (int i = b.num_tokens(1); i < 16; ++i) b.append_token(1, i);
  REQUIRE_THROWS_AS(b.append_token(1, 5), std::logic_error);
  REQUIRE_THROWS_AS(b.set_num_computed_tokens(0, 6), std::logic_error);
  REQUIRE_THROWS_AS(b.append_token(2, 5), std::logic_error);  // no request in row 2
}

TEST_CASE("a full batch, a duplicate id and an oversized request are refused", "[input_batch]") {
  InputBatch b(2, 8, 2);
  b.add_request(make_request(0));
  REQUIRE_THROWS_WITH(b.add_request(make_request(0)), Catch::Contains("already in the batch"));
  b.add_request(make_request(1));
  REQUIRE_THROWS_WITH(b.add_request(make_request(2)), Catch::Contains("all 2 rows are taken"));
  b.remove_request("req-0");
  CachedRequestState big = make_request(3);
  big.prompt_token_ids.assign(9, 1);
  REQUIRE_THROWS_AS(b.add_request(big), std::logic_error);
  big = make_request(3);
  big.block_ids = {{1, 2, 3}};
  REQUIRE_THROWS_AS(b.add_request(big), std::logic_error);
  REQUIRE(b.add_request(make_request(4)) == 0);  // the refusals left the hole usable
}

TEST_CASE("flags come from the request sets and follow adds and removes", "[input_batch]") {
  InputBatch b(8, 16, 2, {2});
  REQUIRE(b.all_greedy());
  REQUIRE(b.no_penalties());
  REQUIRE(b.max_num_logprobs() == -1);
  CachedRequestState greedy = make_request(0), random = make_request(1), penalized = make_request(2);
  greedy.sampling_params.temperature = 0.0f;
  greedy.sampling_params.top_k = -1;
  greedy.sampling_params.logprobs = 3;
  random.sampling_params.top_k = -1;
  random.sampling_params.top_p = 0.9f;
  random.sampling_params.logprobs = 7;
  penalized.sampling_params.frequency_penalty = 0.5f;
  b.add_request(greedy);
  REQUIRE(b.all_greedy());
  REQUIRE_FALSE(b.all_random());
  REQUIRE(b.no_top_k());
  REQUIRE(b.max_num_logprobs() == 3);
  b.add_request(random);
  REQUIRE_FALSE(b.all_greedy());
  REQUIRE_FALSE(b.no_top_p());
  REQUIRE(b.max_num_logprobs() == 7);
  b.add_request(penalized);
  REQUIRE_FALSE(b.no_penalties());
  REQUIRE_FALSE(b.no_top_k());  // top_k = 2
  b.remove_request(random.req_id);
  b.remove_request(penalized.req_id);
  REQUIRE(b.all_greedy());
  REQUIRE(b.no_top_p());
  REQUIRE(b.no_top_k());
  REQUIRE(b.no_penalties());
  REQUIRE(b.max_num_logprobs() == 3);
  b.condense();
  b.refresh_sampling_metadata();
  const SamplingMetadata& m = b.sampling_metadata();
  REQUIRE(m.all_greedy);
  REQUIRE(m.no_penalties);
  REQUIRE(m.max_num_logprobs == 3);
  REQUIRE(m.num_reqs() == 1);
}

TEST_CASE("sampling metadata is rebuilt only when the batch changes", "[input_batch]") {
  InputBatch b(8, 32, 4, {2});
  REQUIRE(b.num_metadata_rebuilds() == 0);
  auto step = [&] {  // what the model runner does each step
    b.condense();
    if (b.batch_changed()) b.refresh_sampling_metadata();
  };
  for (int k = 0; k < 3; ++k) b.add_request(make_request(k));
  REQUIRE_THROWS_WITH(b.sampling_metadata(), Catch::Contains("stale"));
  step();
  REQUIRE(b.num_metadata_rebuilds() == 1);
  // Steps that only append tokens, blocks and computed counts rebuild nothing.
  for (int s = 0; s < 10; ++s) {
    for (int row = 0; row < b.num_reqs(); ++row) b.append_token(row, 40 + s);
    b.append_block_ids(0, GroupBlockIds{{}}), b.set_num_computed_tokens(1, 3);
    step();
  }
  REQUIRE(b.num_metadata_rebuilds() == 1);
  b.remove_request("req-0");
  step();
  REQUIRE(b.num_metadata_rebuilds() == 2);
  b.add_request(make_request(7));
  step();
  step();
  REQUIRE(b.num_metadata_rebuilds() == 3);

  // The metadata copies each row's parameters in batch order: req-2 moved into row 0.
  const SamplingMetadata& m = b.sampling_metadata();
  REQUIRE(b.req_ids() == std::vector<std::string>{"req-2", "req-1", "req-7"});
  REQUIRE(m.temperature == std::vector<float>{0.5f + 0.1f * 2.0f, 0.5f + 0.1f * 1.0f, 0.5f + 0.1f * 7.0f});
  REQUIRE(m.top_k == std::vector<int>{2, 1, 7});
  REQUIRE(m.seeds == std::vector<uint64_t>{1002, 1001, 1007});
}

TEST_CASE("tokens appended each step reach the metadata's history without a rebuild", "[input_batch]") {
  InputBatch b(4, 32, 4, {2});
  CachedRequestState r = make_request(2);  // prompt {2, 3, 4}, output {102, 102}
  r.sampling_params.presence_penalty = 1.0f;
  r.sampling_params.min_tokens = 4;
  r.sampling_params.stop_token_ids = {9};
  r.sampling_params.logit_bias = {{5, 1.5f}};
  b.add_request(make_request(0));
  b.add_request(r);
  b.refresh_sampling_metadata();
  const SamplingMetadata& m = b.sampling_metadata();
  REQUIRE(m.output_token_ids(1).size() == 2);
  b.append_token(1, 55);
  b.append_token(1, 56);
  const auto out = m.output_token_ids(1);
  REQUIRE(std::vector<int>(out.begin(), out.end()) == std::vector<int>{102, 102, 55, 56});
  const auto prompt = m.prompt_token_ids(1);
  REQUIRE(std::vector<int>(prompt.begin(), prompt.end()) == std::vector<int>{2, 3, 4});
  REQUIRE(b.num_metadata_rebuilds() == 1);
  // min_tokens masks the stop ids and EOS; logit_bias points at the row's own list.
  REQUIRE(m.min_tokens_stop_ids[1] != nullptr);
  REQUIRE(*m.min_tokens_stop_ids[1] == std::vector<int>{9, 2});
  REQUIRE(m.min_tokens_stop_ids[0] == nullptr);
  REQUIRE(m.logit_bias[1] != nullptr);
  REQUIRE(m.logit_bias[1]->at(0) == std::pair<int, float>{5, 1.5f});
  REQUIRE_FALSE(m.no_min_tokens);
  REQUIRE_FALSE(m.no_logit_bias);
  REQUIRE_FALSE(m.no_penalties);
}
