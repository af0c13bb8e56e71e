// The block pool with prefix caching (vLLM v1's BlockPool): free-queue order, reference counts, LRU
// eviction, hash-chain prefix hits, reset and invariants. The random test is test_block_pool_random.cpp.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "tests/block_pool_util.hpp"

using namespace parley;
using namespace parley::test;

TEST_CASE("FreeKVCacheBlockQueue keeps free blocks in eviction order with O(1) remove", "[block_pool]") {
  std::vector<KVCacheBlock> blocks;
  for (int i = 0; i < 5; ++i) blocks.emplace_back(i);
  FreeKVCacheBlockQueue q(blocks);
  REQUIRE(q.num_free_blocks() == 5);
  REQUIRE(ids(q.get_all_free_blocks()) == std::vector<int>{0, 1, 2, 3, 4});
  REQUIRE(q.popleft()->block_id == 0);
  q.remove(&blocks[2]);  // middle
  q.remove(&blocks[4]);  // back
  q.remove(&blocks[1]);  // front
  REQUIRE(ids(q.get_all_free_blocks()) == std::vector<int>{3});
  REQUIRE(q.num_free_blocks() == 1);
  REQUIRE((blocks[2].prev_free_block == nullptr && blocks[2].next_free_block == nullptr));
  q.append(&blocks[0]);
  q.append(&blocks[4]);
  REQUIRE(ids(q.get_all_free_blocks()) == std::vector<int>{3, 0, 4});
  REQUIRE_THROWS_AS(q.remove(&blocks[2]), std::logic_error);
  REQUIRE_THROWS_AS(q.append(&blocks[0]), std::logic_error);
  REQUIRE(ids(q.get_all_free_blocks()) == std::vector<int>{3, 0, 4});
  REQUIRE(q.popleft()->block_id == 3);
  REQUIRE(q.popleft()->block_id == 0);
  REQUIRE(q.popleft()->block_id == 4);
  REQUIRE(q.num_free_blocks() == 0);
  REQUIRE(q.get_all_free_blocks().empty());
  REQUIRE_THROWS_AS(q.popleft(), std::runtime_error);
  q.append(&blocks[1]);
  REQUIRE(ids(q.get_all_free_blocks()) == std::vector<int>{1});
}

TEST_CASE("hash_request_blocks hashes full blocks only, each chained on its whole prefix", "[block_pool]") {
  const std::vector<int> t = iota_tokens(10);
  const std::vector<BlockHash> h = hash_request_blocks(t, 4);
  REQUIRE(h.size() == 2);
  REQUIRE(h[0] == hash_block_tokens(NONE_HASH, std::vector<int>{0, 1, 2, 3}));
  REQUIRE(h[1] == hash_block_tokens(h[0], std::vector<int>{4, 5, 6, 7}));
  REQUIRE(h[0] != h[1]);
  REQUIRE(hash_request_blocks(iota_tokens(8), 4) == h);  // the partial tail adds nothing
  REQUIRE(hash_request_blocks(t, 4) == h);               // deterministic
  REQUIRE(hash_request_blocks(iota_tokens(3), 4).empty());
  REQUIRE(hash_request_blocks({}, 4).empty());
  // A different first block changes the second block's hash although its tokens are equal.
  std::vector<int> t2 = t;
  t2[0] = 99;
  const std::vector<BlockHash> h2 = hash_request_blocks(t2, 4);
  REQUIRE((h2[0] != h[0] && h2[1] != h[1]));
  // The extra key (LoRA or multimodal id) separates equal tokens; 0 is the default.
  const std::vector<BlockHash> h7 = hash_request_blocks(t, 4, 7);
  REQUIRE((h7[0] != h[0] && h7[1] != h[1]));
  REQUIRE(hash_request_blocks(t, 4, 0) == h);
  // One block of four tokens is not two blocks of two.
  REQUIRE(hash_request_blocks(iota_tokens(4), 4)[0] != hash_request_blocks(iota_tokens(4), 2)[1]);
  REQUIRE_THROWS_AS(hash_request_blocks(t, 0), std::invalid_argument);
}

TEST_CASE("get_new_blocks hands out blocks in id order, exhaustion throws and changes nothing", "[block_pool]") {
  BlockPool pool(6, true);
  pool.check_invariants();
  REQUIRE(pool.get_num_free_blocks() == 6);
  REQUIRE(pool.get_usage() == 0.0);
  const auto a = pool.get_new_blocks(2);
  REQUIRE(ids(a) == std::vector<int>{0, 1});
  REQUIRE(refs(pool) == std::vector<int>{1, 1, 0, 0, 0, 0});
  const auto b = pool.get_new_blocks(3);
  REQUIRE(ids(b) == std::vector<int>{2, 3, 4});
  REQUIRE(pool.get_new_blocks(0).empty());
  REQUIRE(pool.get_num_free_blocks() == 1);
  REQUIRE(pool.num_used() == 5);
  REQUIRE(pool.get_usage() == Approx(5.0 / 6.0));
  const Snapshot before = snapshot(pool);
  REQUIRE_THROWS_AS(pool.get_new_blocks(2), std::runtime_error);
  REQUIRE(snapshot(pool) == before);
  REQUIRE_THROWS_AS(pool.get_new_blocks(-1), std::invalid_argument);
  const auto c = pool.get_new_blocks(1);
  REQUIRE(ids(c) == std::vector<int>{5});
  REQUIRE(pool.get_usage() == 1.0);
  REQUIRE_THROWS_AS(pool.get_new_blocks(1), std::runtime_error);
  pool.check_invariants();
  pool.free_blocks(c);
  pool.free_blocks({b.rbegin(), b.rend()});
  pool.free_blocks({a.rbegin(), a.rend()});
  REQUIRE(pool.num_used() == 0);
  REQUIRE(free_ids(pool) == std::vector<int>{5, 4, 3, 2, 1, 0});
  pool.check_invariants();
  REQUIRE_THROWS_AS(BlockPool(0, true), std::invalid_argument);
}

TEST_CASE("touch and free_blocks count references, a bad free changes nothing", "[block_pool]") {
  BlockPool pool(4, true);
  const auto a = pool.get_new_blocks(2);
  pool.touch({a[0]});
  REQUIRE(refs(pool) == std::vector<int>{2, 1, 0, 0});
  pool.free_blocks({a[0]});
  REQUIRE(refs(pool) == std::vector<int>{1, 1, 0, 0});
  REQUIRE(free_ids(pool) == std::vector<int>{2, 3});
  pool.free_blocks({a[1], a[0]});
  REQUIRE(refs(pool) == std::vector<int>{0, 0, 0, 0});
  REQUIRE(free_ids(pool) == std::vector<int>{2, 3, 1, 0});
  pool.touch({&pool.block(1)});  // a hit on a free block takes it out of the queue
  REQUIRE(refs(pool) == std::vector<int>{0, 1, 0, 0});
  REQUIRE(free_ids(pool) == std::vector<int>{2, 3, 0});
  pool.check_invariants();
  const Snapshot before = snapshot(pool);
  REQUIRE_THROWS_AS(pool.free_blocks({&pool.block(0)}), std::logic_error);                  // double free
  REQUIRE_THROWS_AS(pool.free_blocks({&pool.block(1), &pool.block(1)}), std::logic_error);  // one ref, two frees
  KVCacheBlock stray(1);
  REQUIRE_THROWS_AS(pool.free_blocks({&stray}), std::logic_error);
  REQUIRE_THROWS_AS(pool.touch({&pool.block(2), &stray}), std::logic_error);
  REQUIRE_THROWS_AS(pool.free_blocks({nullptr}), std::logic_error);
  REQUIRE(snapshot(pool) == before);
  pool.free_blocks({&pool.block(1)});
  REQUIRE(free_ids(pool) == std::vector<int>{2, 3, 0, 1});
  pool.check_invariants();
}

TEST_CASE("freed blocks are evicted oldest first, a sequence's tail before its head", "[block_pool]") {
  BlockPool pool(8, true);
  const int bs = 2;
  const std::vector<int> tokens_a = iota_tokens(6, 1);
  const std::vector<BlockHash> ha = hash_request_blocks(tokens_a, bs);
  const auto a = pool.get_new_blocks(3);
  const auto b = pool.get_new_blocks(2);
  pool.cache_full_blocks(a, ha, 0, 3);
  REQUIRE(pool.num_cached_blocks() == 3);
  pool.free_blocks({a.rbegin(), a.rend()});
  pool.free_blocks({b.rbegin(), b.rend()});
  REQUIRE(free_ids(pool) == std::vector<int>{5, 6, 7, 2, 1, 0, 4, 3});
  for (int i = 0; i < 3; ++i) REQUIRE(pool.get_cached_block(ha[size_t(i)]) == a[size_t(i)]);
  pool.check_invariants();
  // Never-used blocks go first, then A's tail block: its head stays cached.
  REQUIRE(ids(pool.get_new_blocks(4)) == std::vector<int>{5, 6, 7, 2});
  REQUIRE(pool.get_cached_block(ha[2]) == nullptr);
  REQUIRE(!pool.block(2).block_hash);
  REQUIRE(pool.get_cached_block(ha[0]) == &pool.block(0));
  REQUIRE(pool.get_cached_block(ha[1]) == &pool.block(1));
  REQUIRE(pool.num_cached_blocks() == 2);
  pool.check_invariants();
  REQUIRE(ids(pool.get_new_blocks(4)) == std::vector<int>{1, 0, 4, 3});
  REQUIRE(pool.num_cached_blocks() == 0);
  REQUIRE(pool.get_num_free_blocks() == 0);
  pool.check_invariants();
}

TEST_CASE("requests sharing a prefix share blocks, a changed token breaks the chain from its block on",
          "[block_pool]") {
  const int bs = 4;
  BlockPool pool(12, true);
  Request r1{iota_tokens(14)};  // three full blocks and two tokens
  REQUIRE(admit(pool, r1, bs));
  REQUIRE(ids(r1.blocks) == std::vector<int>{0, 1, 2, 3});
  REQUIRE(r1.num_hits == 0);
  REQUIRE(pool.num_cached_blocks() == 3);

  Request r2{iota_tokens(12)};  // the same three blocks, another tail
  r2.tokens.insert(r2.tokens.end(), {100, 101, 102});
  REQUIRE(admit(pool, r2, bs));
  REQUIRE(r2.num_hits == 3);
  REQUIRE(ids(r2.blocks) == std::vector<int>{0, 1, 2, 4});
  REQUIRE(refs(pool) == std::vector<int>{2, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0});
  REQUIRE(pool.num_cached_blocks() == 3);  // block 4 is not full

  Request r3{iota_tokens(14)};
  r3.tokens[9] = 999;  // in block 2
  REQUIRE(hash_request_blocks(r3.tokens, bs)[1] == hash_request_blocks(r1.tokens, bs)[1]);
  REQUIRE(hash_request_blocks(r3.tokens, bs)[2] != hash_request_blocks(r1.tokens, bs)[2]);
  REQUIRE(admit(pool, r3, bs));
  REQUIRE(r3.num_hits == 2);
  REQUIRE(ids(r3.blocks) == std::vector<int>{0, 1, 5, 6});
  REQUIRE(pool.num_cached_blocks() == 4);

  Request r4{iota_tokens(14)};
  r4.tokens[0] = 999;  // in block 0: blocks 1 and 2 hold r1's tokens but another prefix
  REQUIRE(admit(pool, r4, bs));
  REQUIRE(r4.num_hits == 0);
  REQUIRE(ids(r4.blocks) == std::vector<int>{7, 8, 9, 10});
  REQUIRE(refs(pool) == std::vector<int>{3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0});
  REQUIRE(pool.num_cached_blocks() == 7);
  REQUIRE(pool.get_num_free_blocks() == 1);
  pool.check_invariants();

  for (Request* r : {&r4, &r3, &r2, &r1}) release(pool, *r);
  REQUIRE(pool.num_used() == 0);
  REQUIRE(free_ids(pool) == std::vector<int>{11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  REQUIRE(pool.num_cached_blocks() == 7);  // freeing keeps the cache
  pool.check_invariants();

  Request r5{iota_tokens(14)};  // hits free cached blocks and takes them out of the queue
  REQUIRE(admit(pool, r5, bs));
  REQUIRE(r5.num_hits == 3);
  REQUIRE(ids(r5.blocks) == std::vector<int>{0, 1, 2, 11});
  REQUIRE(free_ids(pool) == std::vector<int>{10, 9, 8, 7, 6, 5, 4, 3});
  pool.check_invariants();
  release(pool, r5);
  pool.check_invariants();
}

TEST_CASE("eviction removes the hash from the cache, so a later lookup misses", "[block_pool]") {
  const int bs = 2;
  BlockPool pool(3, true);
  Request r1{{1, 2, 3, 4}};
  REQUIRE(admit(pool, r1, bs));
  REQUIRE(ids(r1.blocks) == std::vector<int>{0, 1});
  const std::vector<BlockHash> h = hash_request_blocks(r1.tokens, bs);
  release(pool, r1);
  REQUIRE(free_ids(pool) == std::vector<int>{2, 1, 0});
  const auto x = pool.get_new_blocks(2);
  REQUIRE(ids(x) == std::vector<int>{2, 1});
  REQUIRE(pool.get_cached_block(h[1]) == nullptr);
  REQUIRE(pool.get_cached_block(h[0]) == &pool.block(0));
  REQUIRE(pool.num_cached_blocks() == 1);
  pool.check_invariants();
  pool.free_blocks(x);
  Request r2{{1, 2, 3, 4}};
  REQUIRE(admit(pool, r2, bs));
  REQUIRE(r2.num_hits == 1);
  REQUIRE(ids(r2.blocks) == std::vector<int>{0, 2});
  REQUIRE(pool.get_cached_block(h[1]) == &pool.block(2));
  pool.check_invariants();
  release(pool, r2);
  pool.check_invariants();
}

TEST_CASE("blocks cached twice under one hash: the first answers, the other after its eviction", "[block_pool]") {
  BlockPool pool(2, true);
  const std::vector<BlockHash> h = hash_request_blocks({5, 6}, 2);
  const auto a = pool.get_new_blocks(1);
  const auto b = pool.get_new_blocks(1);
  pool.cache_full_blocks(a, h, 0, 1);
  pool.cache_full_blocks(b, h, 0, 1);
  REQUIRE(pool.num_cached_blocks() == 2);
  REQUIRE(pool.get_cached_block(h[0]) == a[0]);
  pool.check_invariants();
  pool.free_blocks(a);
  REQUIRE(ids(pool.get_new_blocks(1)) == std::vector<int>{0});
  REQUIRE(pool.get_cached_block(h[0]) == b[0]);
  REQUIRE(pool.num_cached_blocks() == 1);
  pool.check_invariants();
  // Misuse: a block cached twice, ranges outside the lists, an unreferenced block.
  REQUIRE_THROWS_AS(pool.cache_full_blocks(b, h, 0, 1), std::logic_error);
  REQUIRE_THROWS_AS(pool.cache_full_blocks(b, h, 0, 2), std::invalid_argument);
  REQUIRE_THROWS_AS(pool.cache_full_blocks(b, h, 1, 0), std::invalid_argument);
  pool.free_blocks({&pool.block(0)});
  REQUIRE_THROWS_AS(pool.cache_full_blocks({&pool.block(0)}, h, 0, 1), std::logic_error);
  REQUIRE(pool.num_cached_blocks() == 1);
  pool.check_invariants();
}

TEST_CASE("reset_prefix_cache is refused while blocks are in use, then forgets every hash", "[block_pool]") {
  const int bs = 2;
  BlockPool pool(4, true);
  Request r{{1, 2, 3, 4, 5}};
  REQUIRE(admit(pool, r, bs));
  const std::vector<BlockHash> h = hash_request_blocks(r.tokens, bs);
  REQUIRE(pool.num_cached_blocks() == 2);
  REQUIRE_FALSE(pool.reset_prefix_cache());
  REQUIRE(pool.num_cached_blocks() == 2);
  REQUIRE(pool.get_cached_block(h[1]) == &pool.block(1));
  release(pool, r);
  REQUIRE(pool.reset_prefix_cache());
  REQUIRE(pool.num_cached_blocks() == 0);
  REQUIRE(pool.get_cached_block(h[0]) == nullptr);
  REQUIRE(pool.get_cached_block(h[1]) == nullptr);
  for (int i = 0; i < 4; ++i) REQUIRE(!pool.block(i).block_hash);
  REQUIRE(free_ids(pool) == std::vector<int>{3, 2, 1, 0});  // the LRU order is kept
  pool.check_invariants();
}

TEST_CASE("with caching off nothing is cached", "[block_pool]") {
  BlockPool pool(3, false);
  const auto a = pool.get_new_blocks(2);
  const std::vector<BlockHash> h = hash_request_blocks({1, 2, 3, 4}, 2);
  pool.cache_full_blocks(a, h, 0, 2);
  REQUIRE(pool.num_cached_blocks() == 0);
  REQUIRE(pool.get_cached_block(h[0]) == nullptr);
  REQUIRE(!a[0]->block_hash);
  pool.check_invariants();
  pool.free_blocks({a.rbegin(), a.rend()});
  REQUIRE(free_ids(pool) == std::vector<int>{2, 1, 0});
  pool.check_invariants();
}

TEST_CASE("check_invariants names the broken invariant", "[block_pool]") {
  BlockPool pool(3, true);
  const auto a = pool.get_new_blocks(1);
  pool.block(1).ref_cnt = 1;  // in the free queue with a reference
  REQUIRE_THROWS_WITH(pool.check_invariants(), Catch::Contains("block 1 is in the free queue with ref_cnt 1"));
  pool.block(1).ref_cnt = 0;
  a[0]->ref_cnt = 0;  // out of the queue without one
  REQUIRE_THROWS_WITH(pool.check_invariants(), Catch::Contains("block 0 is out of the free queue with ref_cnt 0"));
  a[0]->ref_cnt = 1;
  a[0]->block_hash = hash_request_blocks({1}, 1)[0];  // a hash the cache does not map
  REQUIRE_THROWS_WITH(pool.check_invariants(), Catch::Contains("1 blocks hold a hash but the cache maps 0"));
  a[0]->block_hash.reset();
  pool.check_invariants();
}
