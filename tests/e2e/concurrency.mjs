// 64 concurrent streaming clients, then each request alone: the same text and token count (batch
// invariance: a request's tokens depend on its prompt, parameters and seed alone, not on its batch company). Then the
// same 64 streams, with n = 2 and stop strings mixed in, against a server with --no-async-scheduling:
// byte-identical texts and finish reasons (C6); and against a server with n-gram speculation (C5).
//   node tests/e2e/concurrency.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { main, stream, complete, assertNoLeaks, readMetrics, metricValue } from './lib.mjs';

const CLIENTS = 64;
const MAX_TOKENS = 48;
const OPENINGS = [
  'Once upon a time', 'The little girl', 'One day, a big dog', 'Tom and Sue', 'There was a red ball',
  'Lily wanted to', 'The sun was', 'A small bird', 'Mom said', 'The cat and the mouse', 'In the park',
  'Ben had a toy', 'The old tree', 'It was a rainy day', 'Sam saw a', 'The boat',
];

function request(i) {
  return {
    prompt: `${OPENINGS[i % OPENINGS.length]}${i >= OPENINGS.length ? ` ${'and '.repeat(Math.floor(i / OPENINGS.length))}` : ''}`.trim(),
    temperature: 0.7,
    seed: 1000 + i,
    max_tokens: MAX_TOKENS,
    ignore_eos: true,
  };
}

main('concurrency', async (parley, t) => {
  const server = await t.start(['--admin-token', 'adm']);
  const base = server.base;
  const reqs = Array.from({ length: CLIENTS }, (_, i) => request(i));

  // All at once, streamed (raw fetch + SSE parsing), with the usage chunk.
  const t0 = performance.now();
  const streams = await Promise.all(reqs.map((body) => stream(base, '/v1/completions', { ...body, stream_options: { include_usage: true } })));
  const concurrentMs = performance.now() - t0;
  streams.forEach((s, i) => {
    assert.equal(s.status, 200, `client ${i}: status ${s.status} ${s.body ?? ''}`);
    assert.deepEqual(s.errors, [], `client ${i}: in-band errors ${JSON.stringify(s.errors)}`);
    assert.ok(s.done, `client ${i}: stream ended without data: [DONE]`);
    assert.equal(s.finishReasons[0], 'length', `client ${i}: finish_reason ${s.finishReasons[0]} (ignore_eos, so "length")`);
    assert.ok(s.usage, `client ${i}: no usage chunk`);
    assert.equal(s.usage.completion_tokens, MAX_TOKENS, `client ${i}: completion_tokens ${s.usage.completion_tokens}`);
  });
  t.check();
  server.assertAlive();

  // Batch company must not matter: some texts differ across clients, else the test proves little.
  assert.ok(new Set(streams.map((s) => s.text)).size > CLIENTS / 2, 'the 64 concurrent outputs are suspiciously alike');

  // Each request alone, one after another, non-streamed: identical text and token count.
  const t1 = performance.now();
  const mismatches = [];
  for (let i = 0; i < CLIENTS; i++) {
    const alone = await complete(base, reqs[i]);
    const c = alone.choices[0];
    if (c.text !== streams[i].text || alone.usage.completion_tokens !== streams[i].usage.completion_tokens ||
        alone.usage.prompt_tokens !== streams[i].usage.prompt_tokens) {
      mismatches.push(`request ${i} ${JSON.stringify(reqs[i])}:\n  in a batch of ${CLIENTS}: ${JSON.stringify(streams[i].text)} ` +
                      `(usage ${JSON.stringify(streams[i].usage)})\n  alone:              ${JSON.stringify(c.text)} (usage ${JSON.stringify(alone.usage)})`);
    }
  }
  const aloneMs = performance.now() - t1;
  assert.equal(mismatches.length, 0, `${mismatches.length}/${CLIENTS} requests differ between batched and alone (C10):\n${mismatches.slice(0, 5).join('\n')}`);
  t.check();

  await assertNoLeaks(base);
  t.check();

  // Async scheduling (the default) against one step at a time.
  const sync = await t.start(['--admin-token', 'adm', '--no-async-scheduling'], { label: 'async off' });
  const mixed = reqs.map((body, i) => ({
    ...body,
    ...(i % 4 === 1 ? { n: 2 } : {}),
    ...(i % 4 === 2 ? { stop: ['.', '!'], ignore_eos: false } : {}),
    ...(i % 8 === 3 ? { min_tokens: 20, ignore_eos: false } : {}),
  }));
  const runAll = (b) => Promise.all(mixed.map((body) => stream(b, '/v1/completions', body)));
  const [on, off] = [await runAll(base), await runAll(sync.base)];
  for (let i = 0; i < CLIENTS; i++) {
    assert.equal(on[i].status, 200, `async on, client ${i}: status ${on[i].status}`);
    assert.deepEqual(on[i].texts, off[i].texts, `client ${i} ${JSON.stringify(mixed[i])}: async on and off differ`);
    assert.equal(Object.keys(on[i].texts).length, mixed[i].n ?? 1, `client ${i}: choices ${JSON.stringify(on[i].texts)}`);
    assert.deepEqual(on[i].finishReasons, off[i].finishReasons, `client ${i}: finish reasons differ`);
  }
  assert.ok(on.some((s) => Object.values(s.finishReasons).includes('stop')), 'no stop string ever matched: the mix proves little');
  for (const [b, want] of [[base, true], [sync.base, false]]) {
    const view = await (await fetch(b + '/admin/requests', { headers: { Authorization: 'Bearer adm' } })).json();
    assert.equal(view.steps.async_scheduling, want, `admin view: ${JSON.stringify(view.steps)}`);
    assert.ok(view.steps.total > 0);
  }
  await assertNoLeaks(sync.base, { label: 'async off' });
  await assertNoLeaks(base);
  t.check();

  // Speculative decoding (n-gram drafts, exact verification, padded): the same bytes again (C5, C10).
  const spec = await t.start(['--speculative-config', '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2}'],
                             { label: 'speculative' });
  const drafted = await runAll(spec.base);
  for (let i = 0; i < CLIENTS; i++) {
    assert.deepEqual(drafted[i].texts, on[i].texts, `client ${i} ${JSON.stringify(mixed[i])}: speculation changed the output`);
    assert.deepEqual(drafted[i].finishReasons, on[i].finishReasons, `client ${i}: finish reasons differ with speculation`);
  }
  const samples = await readMetrics(spec.base);
  assert.ok(metricValue(samples, 'parley:spec_decode_num_accepted_tokens_total') > 0, 'no draft was ever accepted');
  assert.equal(metricValue(samples, 'parley:uniform_decode_steps_total'), metricValue(samples, 'parley:decode_steps_total'),
               'with padding every decode step is uniform');
  await assertNoLeaks(spec.base, { label: 'speculative' });
  t.check();
  t.note(`${CLIENTS} concurrent in ${(concurrentMs / 1000).toFixed(2)} s, sequential in ${(aloneMs / 1000).toFixed(2)} s`);
});
