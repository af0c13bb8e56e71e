// Sliding-window KV groups (model/kv_cache_layout.hpp, engine/single_type_kv_cache_manager.hpp): layers are
// grouped by window, a block holds one group's layers, and a window's group gives back the blocks that no
// later query can see, while what it keeps is exactly what its queries read.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/kv_cache_manager.hpp"
#include "model/kv_cache_layout.hpp"
#include "model/llama_config.hpp"
#include "fake_worker.hpp"

using namespace parley;

namespace {

Request prompt_request(const std::string& id, std::vector<int> prompt) {
  SamplingParams p;
  p.max_tokens = 200;
  return Request(id, std::move(prompt), p, 0);
}

std::vector<int> tokens(int n, int salt) {
  std::vector<int> t;
  for (int i = 0; i < n; ++i) t.push_back(5 + (i * 11 + salt * 7) % 400);
  return t;
}

int null_id(const KVCacheManager& kv) { return kv.block_pool().null_block()->block_id; }

}  // namespace

TEST_CASE("a KV layout cuts layers of one window into equal groups, full attention first", "[kv_layout]") {
  // Gemma 2: every other layer slides.
  const KvCacheLayout g2 = KvCacheLayout::for_windows(std::vector<int>{8, 0, 8, 0, 8, 0});
  REQUIRE(g2.num_groups() == 2);
  REQUIRE(g2.slots_per_block == 3);
  REQUIRE(g2.group_windows() == std::vector<int>{0, 8});
  REQUIRE(g2.groups[0].layers == std::vector<int>{1, 3, 5});
  REQUIRE(g2.groups[1].layers == std::vector<int>{0, 2, 4});
  REQUIRE(g2.group_of_layer == std::vector<int>{1, 0, 1, 0, 1, 0});
  REQUIRE(g2.slot_of_layer == std::vector<int>{0, 0, 1, 1, 2, 2});
  // Gemma 3 1B: 26 layers, every sixth global: 4 global layers, 22 local ones in groups of 4, the last of 2.
  LlamaConfig c;
  c.n_layers = 26, c.sliding_window = 512, c.sliding_window_period = 6;
  const KvCacheLayout g3 = KvCacheLayout::for_model(c);
  REQUIRE(g3.num_groups() == 7);
  REQUIRE(g3.slots_per_block == 4);
  REQUIRE(g3.groups[0].layers == std::vector<int>{5, 11, 17, 23});
  REQUIRE(g3.groups[1].layers == std::vector<int>{0, 1, 2, 3});
  REQUIRE(g3.groups[6].layers == std::vector<int>{24, 25});
  REQUIRE(g3.group_windows() == std::vector<int>{0, 512, 512, 512, 512, 512, 512});
  // Fewer layers than a period: every layer slides, and no group sees everything.
  c.n_layers = 4;
  REQUIRE_FALSE(KvCacheLayout::for_model(c).has_full_attention_group());
  // One kind of layer: one group of them all, as before windows.
  const KvCacheLayout llama = KvCacheLayout::single_group(4);
  REQUIRE((llama.num_groups() == 1 && llama.slots_per_block == 4 && !llama.has_sliding_window()));
  REQUIRE_THROWS_AS(KvCacheLayout::for_windows(std::vector<int>{}), std::invalid_argument);
}

TEST_CASE("a sliding-window group keeps exactly the blocks its next query can see", "[kv_cache_manager][window]") {
  const int bs = 4, window = 10;
  KVCacheManager kv(64, bs, true, {0, window});
  REQUIRE(kv.block_pool().num_usable_blocks() == 63);  // one is the null block
  Request r = prompt_request("a", tokens(8, 1));
  REQUIRE(kv.allocate_slots(r, 8));
  r.num_computed_tokens = 8;
  int most_window_blocks = 0;
  for (int step = 0; step < 60; ++step) {
    r.append_output_token(7 + step);
    REQUIRE(kv.allocate_slots(r, 1));
    const GroupBlockIds ids = kv.block_ids("a");
    const int held = r.num_computed_tokens + 1;
    REQUIRE(int(ids[0].size()) == (held + bs - 1) / bs);
    REQUIRE(std::count(ids[0].begin(), ids[0].end(), null_id(kv)) == 0);  // full attention keeps all
    REQUIRE(ids[1].size() == ids[0].size());
    // The query at num_computed_tokens sees [num_computed_tokens - window + 1, num_computed_tokens].
    const int first_seen = std::max(0, r.num_computed_tokens - window + 1);
    int window_blocks = 0;
    for (size_t b = 0; b < ids[1].size(); ++b) {
      const bool seen = int(b + 1) * bs > first_seen;
      CAPTURE(step, b, first_seen);
      REQUIRE((ids[1][b] != null_id(kv)) == seen);
      window_blocks += seen;
    }
    most_window_blocks = std::max(most_window_blocks, window_blocks);
    REQUIRE(kv.block_pool().num_used() == int(ids[0].size()) + window_blocks);
    kv.block_pool().check_invariants();
    r.num_computed_tokens += 1;
  }
  REQUIRE(most_window_blocks == 4);  // 10 tokens straddle at most 4 blocks of 4
  kv.free(r);
  REQUIRE(kv.block_pool().num_used() == 0);
  kv.block_pool().check_invariants();
}

TEST_CASE("a prefix hit with a window needs the window's blocks cached before the hit's end",
          "[kv_cache_manager][window]") {
  const int bs = 4, window = 10;
  KVCacheManager kv(80, bs, true, {0, window});
  Request a = prompt_request("a", tokens(64, 2));
  REQUIRE(kv.allocate_slots(a, 64));
  a.num_computed_tokens = 64;
  for (int step = 0; step < 40; ++step) {  // its early window blocks go back to the pool (still cached)
    a.append_output_token(300 + step);
    REQUIRE(kv.allocate_slots(a, 1));
    a.num_computed_tokens += 1;
  }
  kv.free(a);

  // The same 64 prompt tokens, then others: 16 blocks hit in both groups, the window's only at the end.
  std::vector<int> prompt = tokens(64, 2);
  prompt.insert(prompt.end(), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  Request b = prompt_request("b", prompt);
  int hit = 0;
  KVCacheBlocks hits = kv.get_computed_blocks(b, &hit);
  REQUIRE(hit == 64);
  REQUIRE(hits[0].size() == 16);
  REQUIRE(hits[1].size() == 16);
  for (int i = 0; i < 16; ++i)
    REQUIRE((hits[1][size_t(i)] == kv.block_pool().null_block()) == (i < 13));  // 9 earlier tokens: 3 blocks

  // Blocks that left the window sit at the front of the free queue: new blocks evict them first. Once the
  // window's blocks before position 48 are gone, a prompt sharing 48 tokens hits nothing at all, though full
  // attention still has its 12 blocks.
  Request filler = prompt_request("filler", tokens(100, 9));
  REQUIRE(kv.allocate_slots(filler, 100));
  std::vector<int> shorter(prompt.begin(), prompt.begin() + 48);
  shorter.insert(shorter.end(), {11, 12, 13, 14, 15});
  Request c = prompt_request("c", shorter);
  hits = kv.get_computed_blocks(c, &hit);
  REQUIRE(hit < 48);
  REQUIRE(hits[0].size() == hits[1].size());
  REQUIRE(kv.allocate_slots(c, int(shorter.size()) - hit, hits));
  kv.free(c), kv.free(filler);
  REQUIRE(kv.block_pool().num_used() == 0);
  kv.block_pool().check_invariants();
}

TEST_CASE("the delayed split shares a window's blocks and copies each group's partial block",
          "[kv_cache_manager][window]") {
  KVCacheManager kv(40, 4, true, {0, 6});
  Request parent = prompt_request("p", tokens(30, 3));
  REQUIRE(kv.allocate_slots(parent, 30));
  parent.num_computed_tokens = 30;
  Request child = prompt_request("c", tokens(30, 3));
  const auto copies = kv.fork(parent, child);
  REQUIRE(copies);
  REQUIRE(copies->size() == 2);  // 30 tokens end inside a block: one copy per group
  const GroupBlockIds p = kv.block_ids("p"), c = kv.block_ids("c");
  for (int g = 0; g < 2; ++g) {
    REQUIRE(std::equal(p[g].begin(), p[g].begin() + 7, c[g].begin()));
    REQUIRE((*copies)[size_t(g)] == std::make_pair(p[g][7], c[g][7]));
  }
  kv.free(parent), kv.free(child);
  REQUIRE(kv.block_pool().num_used() == 0);
}

TEST_CASE("scheduling with a sliding-window group: the same tokens, every read its own, fewer blocks",
          "[scheduler][window]") {
  // The fake worker checks that each query's window holds the tokens it computed there: a block given back
  // too early and reused by another request fails it. Prefix hits, preemption, the n-split and two steps in
  // flight all run over the windowed group.
  std::vector<Request> reqs;
  for (int i = 0; i < 10; ++i)
    reqs.push_back(fakes::make_request("r" + std::to_string(i), fakes::prompt_of(30 + 9 * i, i % 3), 40 + 5 * i));
  reqs.push_back(fakes::parallel_request("n", fakes::prompt_of(50, 1), 3, 30, 7));
  auto run = [&](std::vector<int> windows, int num_blocks, size_t in_flight) {
    CAPTURE(windows, num_blocks, in_flight);
    SchedulerConfig c = fakes::config(num_blocks, 48);
    c.kv_group_windows = windows;
    Scheduler s(c);
    fakes::FakeWorker w;
    w.windows = windows;
    for (const Request& r : reqs) s.add_request(r);
    fakes::Run out = fakes::run_all(s, w, in_flight);
    return std::make_pair(out, s.stats());
  };
  const auto [plain, plain_stats] = run({0, 0}, 400, 1);
  for (size_t in_flight : {size_t(1), size_t(2)}) {
    const auto [roomy, roomy_stats] = run({0, 24}, 401, in_flight);
    REQUIRE(roomy.outputs == plain.outputs);
    REQUIRE(roomy_stats.peak_used_blocks < plain_stats.peak_used_blocks);
    const auto [short_of_blocks, short_stats] = run({0, 24}, 41, in_flight);
    REQUIRE(short_of_blocks.outputs == plain.outputs);
    REQUIRE(short_stats.num_preemptions > 0);
  }
}

TEST_CASE("a window keeps the blocks of drafts a verification may still reject", "[kv_cache_manager][window]") {
  // 30 computed tokens of which the last 4 are drafts in flight: if all are rejected the next query is at
  // 26, whose window of 10 starts at 17, in block 4 (16..19). Counting the drafts as computed would free it.
  const int bs = 4, window = 10;
  KVCacheManager kv(32, bs, true, {0, window});
  Request r = prompt_request("a", tokens(30, 4));
  REQUIRE(kv.allocate_slots(r, 30));
  r.num_computed_tokens = 30;
  REQUIRE(kv.allocate_slots(r, 1, {}, true, 4));
  GroupBlockIds ids = kv.block_ids("a");
  REQUIRE(ids[1][4] != null_id(kv));
  REQUIRE(ids[1][3] == null_id(kv));  // 12..15: before 17 either way
  REQUIRE(kv.allocate_slots(r, 1));   // the drafts stood: now block 4 is out of the window of 30
  ids = kv.block_ids("a");
  REQUIRE(ids[1][4] == null_id(kv));
  kv.free(r);
  REQUIRE(kv.block_pool().num_used() == 0);
}
