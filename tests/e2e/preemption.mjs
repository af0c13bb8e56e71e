// Preemption by recompute changes no output: the same 8 concurrent seeded requests on a
// server with a large KV pool and on one with 12 blocks of 16 tokens (8 requests of ~70 tokens need ~40)
// give identical texts; the small one preempted (parley:num_preemptions_total > 0); neither leaks.
//   node tests/e2e/preemption.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { main, stream, complete, metric, assertNoLeaks, randomTokenIds } from './lib.mjs';

const REQUESTS = 8;
const MAX_TOKENS = 60;

function request(i) {
  // Token-id prompts of 6..13 tokens: every request fits the small pool alone (<= 5 blocks of 16).
  return { prompt: randomTokenIds(6 + i, 500 + i), temperature: 0.8, seed: i + 1, max_tokens: MAX_TOKENS, ignore_eos: true };
}

async function runAll(base) {
  const outs = await Promise.all(Array.from({ length: REQUESTS }, (_, i) =>
    stream(base, '/v1/completions', { ...request(i), stream_options: { include_usage: true } })));
  outs.forEach((o, i) => {
    assert.equal(o.status, 200, `request ${i}: ${o.status} ${o.body ?? ''}`);
    assert.deepEqual(o.errors, [], `request ${i}: in-band errors ${JSON.stringify(o.errors)}`);
    assert.ok(o.done, `request ${i}: no [DONE]`);
    assert.equal(o.usage?.completion_tokens, MAX_TOKENS, `request ${i}: usage ${JSON.stringify(o.usage)}`);
    assert.equal(o.finishReasons[0], 'length', `request ${i}: finish_reason ${o.finishReasons[0]}`);
  });
  return outs.map((o) => o.text);
}

main('preemption', async (parley, t) => {
  const large = await t.start([], { label: 'large-pool server' });
  const small = await t.start(['--num-kv-blocks', '12', '--block-size', '16', '--max-num-seqs', '8'], { label: 'small-pool server' });

  const before = await metric(small.base, 'parley:num_preemptions_total');
  const [bigTexts, smallTexts] = await Promise.all([runAll(large.base), runAll(small.base)]);
  t.check();
  const preemptions = (await metric(small.base, 'parley:num_preemptions_total')) - before;
  assert.ok(preemptions > 0, `the 12-block server never preempted (parley:num_preemptions_total delta ${preemptions}); the test no longer exercises preemption`);
  t.check();

  for (let i = 0; i < REQUESTS; i++) {
    assert.equal(smallTexts[i], bigTexts[i],
                 `request ${i} ${JSON.stringify(request(i))}: the preempted run differs from the large-pool run\n` +
                 `  large: ${JSON.stringify(bigTexts[i])}\n  small: ${JSON.stringify(smallTexts[i])}`);
  }
  t.check();

  // And the same as each request alone, non-streamed.
  for (let i = 0; i < REQUESTS; i++) {
    const alone = await complete(large.base, request(i));
    assert.equal(alone.choices[0].text, bigTexts[i], `request ${i}: alone differs from the concurrent run`);
  }
  t.check();

  await assertNoLeaks(large.base, { label: 'large-pool server' });
  await assertNoLeaks(small.base, { label: 'small-pool server' });
  t.check();
  t.note(`${preemptions} preemptions on the small pool`);
});
