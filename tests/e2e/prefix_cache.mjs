// Prefix caching over full blocks: a repeated prompt computes only what its cached full
// blocks do not cover. A prompt of L tokens hits floor((L-1)/B)*B tokens (the last token is always
// computed, as vLLM), so it computes L - floor((L-1)/B)*B <= B; outputs are unchanged by the hit (C10).
//   node tests/e2e/prefix_cache.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { main, complete, readMetrics, metricValue, settle, assertNoLeaks, randomTokenIds } from './lib.mjs';

const BLOCK = 16;

async function counters(base) {
  const s = await settle(base);
  return {
    computed: metricValue(s, 'parley:prefill_tokens_computed_total'),
    queries: metricValue(s, 'parley:prefix_cache_queries_total'),
    hits: metricValue(s, 'parley:prefix_cache_hits_total'),
  };
}
const delta = (a, b) => Object.fromEntries(Object.keys(a).map((k) => [k, b[k] - a[k]]));

main('prefix_cache', async (parley, t) => {
  const server = await t.start(['--block-size', String(BLOCK)]);
  const base = server.base;

  for (const [len, seed] of [[200, 11], [208, 12], [17, 13], [16, 14]]) {
    const body = { prompt: randomTokenIds(len, seed), max_tokens: 4, temperature: 0.8, seed: 5 };
    const c0 = await counters(base);
    const first = await complete(base, body);
    assert.equal(first.usage.prompt_tokens, len, `prompt of ${len} token ids: usage.prompt_tokens ${first.usage.prompt_tokens}`);
    const c1 = await counters(base);
    const d1 = delta(c0, c1);
    assert.equal(d1.computed, len, `first request (L=${len}): prefill_tokens_computed delta ${d1.computed}, expected ${len} (a fresh prompt hits nothing)`);
    assert.equal(d1.hits, 0, `first request (L=${len}): prefix_cache_hits delta ${d1.hits}`);

    const second = await complete(base, body);
    const c2 = await counters(base);
    const d2 = delta(c1, c2);
    const hit = Math.floor((len - 1) / BLOCK) * BLOCK;
    assert.equal(d2.computed, len - hit,
                 `repeat (L=${len}): prefill_tokens_computed delta ${d2.computed}, expected ${len - hit} (${hit} tokens from ${hit / BLOCK} cached blocks)`);
    assert.ok(d2.computed <= BLOCK && d2.computed >= 1);
    assert.equal(d2.hits, hit, `repeat (L=${len}): prefix_cache_hits delta ${d2.hits}, expected ${hit}`);
    assert.ok(d2.queries >= len, `repeat (L=${len}): prefix_cache_queries delta ${d2.queries}, expected >= ${len}`);
    assert.equal(second.choices[0].text, first.choices[0].text, `repeat (L=${len}): a prefix-cache hit changed the output (C10)`);
    t.check();
  }

  // A prompt that shares its first 160 tokens (10 blocks) with a cached one hits exactly those blocks.
  const shared = randomTokenIds(160, 21);
  const a = [...shared, ...randomTokenIds(40, 22)];
  const b = [...shared, ...randomTokenIds(45, 23)];
  await complete(base, { prompt: a, max_tokens: 2, temperature: 0 });
  const c3 = await counters(base);
  const rb = await complete(base, { prompt: b, max_tokens: 2, temperature: 0 });
  const d3 = delta(c3, await counters(base));
  assert.equal(d3.hits, 160, `shared 160-token prefix: hits delta ${d3.hits}`);
  assert.equal(d3.computed, b.length - 160, `shared 160-token prefix: computed delta ${d3.computed}`);
  t.check();

  // Cache off: the same repeat computes everything.
  await assertNoLeaks(base);
  const noCache = await t.start(['--block-size', String(BLOCK), '--no-enable-prefix-caching'], { label: 'no-prefix-cache server' });
  const body = { prompt: b, max_tokens: 2, temperature: 0 };
  await complete(noCache.base, body);
  const n1 = await counters(noCache.base);
  const rn = await complete(noCache.base, body);
  const dn = delta(n1, await counters(noCache.base));
  assert.equal(dn.computed, b.length, `prefix caching off: computed delta ${dn.computed}, expected ${b.length}`);
  assert.equal(dn.hits, 0, 'prefix caching off: hits');
  assert.equal(rn.choices[0].text, rb.choices[0].text, 'greedy output differs with prefix caching off');
  t.check();

  await assertNoLeaks(base);
  await assertNoLeaks(noCache.base);
  t.check();
});
