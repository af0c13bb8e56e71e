// The block pool under 10000 random operations (fixed seed): admit with prefix hits, decode, preempt,
// finish, raw allocations, failed allocations and resets, checked after each against a reference model.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <vector>

#include "tests/block_pool_util.hpp"

using namespace parley;
using namespace parley::test;

TEST_CASE("10000 random operations keep every invariant and match a reference model", "[block_pool]") {
  const int bs = 3, num_blocks = 24, vocab = 5;
  BlockPool pool(num_blocks, true);
  std::mt19937 rng(20250611);  // mt19937's output is fixed by the standard, so the run is too
  auto rnd = [&](int n) { return int(rng() % uint32_t(n)); };
  std::vector<std::vector<int>> bases(4);  // shared prefixes, so lookups hit
  for (auto& base : bases)
    for (int i = 0; i < 30; ++i) base.push_back(rnd(vocab));
  std::vector<Request> live;
  std::vector<std::vector<KVCacheBlock*>> raw;              // allocations outside any request
  std::vector<std::vector<int>> cached_prefix(num_blocks);  // tokens up to the end of each cached block
  int hits = 0, evictions = 0, preemptions = 0, refusals = 0, resets = 0;

  auto record_cached = [&](const Request& r, int from) {
    for (int i = from; i < r.num_cached; ++i)
      cached_prefix[size_t(r.blocks[size_t(i)]->block_id)].assign(r.tokens.begin(), r.tokens.begin() + (i + 1) * bs);
  };
  auto check_hit_contents = [&](const Request& r) {
    for (int i = 0; i < r.num_hits; ++i)
      REQUIRE(cached_prefix[size_t(r.blocks[size_t(i)]->block_id)] ==
              std::vector<int>(r.tokens.begin(), r.tokens.begin() + (i + 1) * bs));
  };
  auto drop = [&](size_t i) {
    release(pool, live[i]);
    live.erase(live.begin() + std::ptrdiff_t(i));
  };

  for (int step = 0; step < 10000; ++step) {
    const int op = rnd(1000);
    const int cached_before = pool.num_cached_blocks();
    if (op < 350) {  // admit a request
      Request r;
      const auto& base = bases[size_t(rnd(4))];
      r.tokens.assign(base.begin(), base.begin() + 1 + rnd(18));
      if (rnd(4) == 0) r.tokens[size_t(rnd(int(r.tokens.size())))] = rnd(vocab);
      const Snapshot before = snapshot(pool);
      if (admit(pool, r, bs)) {
        check_hit_contents(r);
        hits += r.num_hits;
        evictions += cached_before + (r.num_cached - r.num_hits) - pool.num_cached_blocks();
        record_cached(r, r.num_hits);
        live.push_back(std::move(r));
      } else {
        REQUIRE(snapshot(pool) == before);
        ++refusals;
      }
    } else if (op < 600 && !live.empty()) {  // decode a few tokens; preempt when blocks run out
      const size_t i = size_t(rnd(int(live.size())));
      std::vector<int> more(size_t(1 + rnd(4)));
      for (int& t : more) t = rnd(vocab);
      const int from = live[i].num_cached;
      if (live[i].tokens.size() + more.size() > 40) {
        drop(i);
      } else if (grow(pool, live[i], more, bs)) {
        evictions += cached_before + (live[i].num_cached - from) - pool.num_cached_blocks();
        record_cached(live[i], from);
      } else {
        drop(i);
        ++preemptions;
      }
    } else if (op < 900 && !live.empty()) {  // finish a request
      drop(size_t(rnd(int(live.size()))));
    } else if (op < 950) {  // raw allocations, and one more than is free must fail cleanly
      const Snapshot before = snapshot(pool);
      REQUIRE_THROWS_AS(pool.get_new_blocks(pool.get_num_free_blocks() + 1 + rnd(3)), std::runtime_error);
      REQUIRE(snapshot(pool) == before);
      const int n = std::min(1 + rnd(3), pool.get_num_free_blocks());
      if (n > 0) raw.push_back(pool.get_new_blocks(n));
      evictions += cached_before - pool.num_cached_blocks();
    } else if (op < 990 && !raw.empty()) {
      const size_t i = size_t(rnd(int(raw.size())));
      pool.free_blocks(raw[i]);
      raw.erase(raw.begin() + std::ptrdiff_t(i));
    } else if (op >= 995) {  // drain everything, then the reset must be accepted
      REQUIRE(pool.reset_prefix_cache() == (live.empty() && raw.empty()));
      while (!live.empty()) drop(live.size() - 1);
      for (auto& blocks : raw) pool.free_blocks(blocks);
      raw.clear();
      REQUIRE(pool.num_used() == 0);
      REQUIRE(pool.reset_prefix_cache());
      REQUIRE(pool.num_cached_blocks() == 0);
      ++resets;
    }

    pool.check_invariants();
    std::vector<int> expected(num_blocks, 0);
    for (const Request& r : live)
      for (const KVCacheBlock* b : r.blocks) ++expected[size_t(b->block_id)];
    for (const auto& blocks : raw)
      for (const KVCacheBlock* b : blocks) ++expected[size_t(b->block_id)];
    REQUIRE(refs(pool) == expected);
    REQUIRE(pool.num_used() == num_blocks - int(std::count(expected.begin(), expected.end(), 0)));
    for (int id = 0; id < num_blocks; ++id) {  // every cached hash names the tokens the block holds
      const auto& h = pool.block(id).block_hash;
      if (h) REQUIRE(hash_request_blocks(cached_prefix[size_t(id)], bs).back() == *h);
    }
  }
  while (!live.empty()) drop(live.size() - 1);
  for (auto& blocks : raw) pool.free_blocks(blocks);
  REQUIRE(pool.num_used() == 0);
  REQUIRE(pool.get_num_free_blocks() == num_blocks);
  pool.check_invariants();
  // The run exercised what it is meant to.
  CHECK(hits > 1000);
  CHECK(evictions > 500);
  CHECK(preemptions > 10);
  CHECK(refusals > 10);
  CHECK(resets > 5);
}
