// n > 1 at a full batch: the delayed split never takes the batch past --max-num-seqs, so one request never
// aborts another. The reproductions of the bug this guards (every one aborted every live request):
// 129 prompts x n 2 at the default limits, 255 running requests plus one n 2, and --max-num-seqs 4 with a lone
// n 5 (now a 400 naming both) or n 4 (completes). Every choice equals the same request run alone with seed + i,
// and the engine reports no lost step.
//   node tests/e2e/full_batch.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { main, complete, post, stream, readMetrics, metricValue, assertNoLeaks, sleep } from './lib.mjs';

const SEED = 11;

// Choice k of a multi-prompt n-sample completion is prompt floor(k / n), sample k % n: seed + sample.
async function assertChoicesAlone(base, body, got, label) {
  const n = body.n;
  assert.equal(got.choices.length, body.prompt.length * n, `${label}: choice count`);
  const alone = await Promise.all(got.choices.map((_, k) =>
    complete(base, { ...body, prompt: body.prompt[Math.floor(k / n)], n: 1, seed: body.seed + (k % n) })));
  got.choices.forEach((c, k) => {
    assert.notEqual(c.finish_reason, 'abort', `${label}: choice ${k} aborted`);
    assert.equal(c.text, alone[k].choices[0].text, `${label}: choice ${k} differs from its request alone`);
    assert.equal(c.finish_reason, alone[k].choices[0].finish_reason, `${label}: choice ${k}'s finish reason`);
  });
}

async function stepFailures(base) {
  return metricValue(await readMetrics(base), 'parley:engine_step_failures_total', {}, { optional: true }) ?? 0;
}

main('full_batch', async (parley, t) => {
  const server = await t.start(['--threads', '1']);
  const base = server.base;

  // 129 prompts x n 2 = 258 sequences against 256 rows.
  const wide = { prompt: Array.from({ length: 129 }, (_, i) => `Tom had ${i} apples`), n: 2, temperature: 1,
                 max_tokens: 16, seed: SEED };
  await assertChoicesAlone(base, wide, await complete(base, wide), '129 x n 2');
  t.check();

  // 255 long streams running, then one n 2: its second child has no row until a stream ends.
  const streams = Array.from({ length: 255 }, (_, i) =>
    stream(base, '/v1/completions', { prompt: `Lily ${i}`, max_tokens: 60, ignore_eos: true, temperature: 0, n: 1 }));
  for (let i = 0; i < 300; ++i) {
    if (metricValue(await readMetrics(base), 'parley:num_requests_running', { model_name: 'stories260K' }) >= 255) break;
    await sleep(20);
  }
  const pair = { prompt: ['The cat sat'], n: 2, temperature: 1, max_tokens: 24, seed: SEED };
  const late = complete(base, pair);
  for (const s of await Promise.all(streams)) {
    assert.equal(s.status, 200);
    assert.equal(s.finishReasons[0], 'length', 'a running stream was ended by the n 2 request');
  }
  await assertChoicesAlone(base, pair, await late, '255 running + n 2');
  assert.equal(await stepFailures(base), 0, 'no step was lost');
  await assertNoLeaks(base, { timeoutMs: 10000 });
  t.check();

  // Admission counts sequences: 1000 prompts x n 64 is 64,000 against --max-waiting 1024, a 400 naming the bound.
  const huge = await post(base, '/v1/completions', { prompt: Array.from({ length: 1000 }, () => 'a'), n: 64,
                                                      temperature: 1, max_tokens: 4 });
  assert.equal(huge.status, 400, huge.text.slice(0, 300));
  assert.match(huge.json.error.message, /64000 sequences/);
  assert.match(huge.json.error.message, /--max-waiting/);
  await assertNoLeaks(base);
  t.check();

  // --max-num-seqs 4: n 5 can never run side by side (400 naming both); n 4 completes.
  const small = await t.start(['--threads', '1', '--max-num-seqs', '4'], { label: 'max-num-seqs 4' });
  const five = await post(small.base, '/v1/completions', { prompt: 'a', n: 5, temperature: 1, max_tokens: 8 });
  assert.equal(five.status, 400, five.text);
  assert.match(five.json.error.message, /n = 5/);
  assert.match(five.json.error.message, /max_num_seqs = 4/);
  const four = { prompt: ['a'], n: 4, temperature: 1, max_tokens: 8, seed: SEED };
  await assertChoicesAlone(small.base, four, await complete(small.base, four), 'max-num-seqs 4, n 4');
  // Beside three running streams, the n 4 request waits for all four rows instead of aborting them.
  const three = Array.from({ length: 3 }, (_, i) =>
    stream(small.base, '/v1/completions', { prompt: `Sam ${i}`, max_tokens: 40, ignore_eos: true, temperature: 0 }));
  await sleep(50);
  const waiting = complete(small.base, four);
  for (const s of await Promise.all(three)) assert.equal(s.finishReasons[0], 'length');
  await assertChoicesAlone(small.base, four, await waiting, 'max-num-seqs 4, n 4 behind 3 streams');
  assert.equal(await stepFailures(small.base), 0, 'no step was lost');
  await assertNoLeaks(small.base);
  t.check();
});
