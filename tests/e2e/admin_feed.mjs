// The admin feed never waits behind a busy worker: while the worker runs one long step (two 1800-token prompts
// prefilled in one step of a 110M-parameter model on one thread), /admin/events keeps sending an event every
// half second, from the last snapshot, with its age growing; with --admin-show-prompts it carries the prompts.
//   node tests/e2e/admin_feed.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { main, post, sleep, randomTokenIds } from './lib.mjs';

main('admin_feed', async (parley, t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-admin-feed-'));
  const model = path.join(dir, 'm110.gguf');
  execFileSync(parley, ['gen-model', '--shape', '110m', '--dtype', 'q8_0', '--out', model]);
  const server = await t.start(['--threads', '1', '--max-num-batched-tokens', '4096', '--admin-token', 'adm', '--admin-show-prompts'], { model });
  const { base } = server;

  const events = [];
  const controller = new AbortController();
  const feed = (async () => {
    const r = await fetch(`${base}/admin/events`, { headers: { Authorization: 'Bearer adm' }, signal: controller.signal });
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of r.body) {
        buf += decoder.decode(chunk, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const e = JSON.parse(buf.slice(buf.indexOf('data: ') + 6, i));
          buf = buf.slice(i + 2);
          events.push({ at: performance.now(), age: e.age_ms, running: (e.requests.requests ?? []).length,
                        prompts: Object.keys(e.prompts ?? {}).length });
        }
      }
    } catch { /* aborted */ }
  })();
  while (events.filter((e) => e.age >= 0).length < 2) await sleep(50);

  // One long step: two whole 1800-token prompts in one prefill (two of 1000 took 1.8 s on an AMX Xeon).
  const started = performance.now();
  const [r] = await Promise.all([5, 6].map((seed) =>
    post(base, '/v1/completions', { model: 'm110', prompt: randomTokenIds(1800, seed, { hi: 32000 }), max_tokens: 1 })));
  const stepSeconds = (performance.now() - started) / 1000;
  controller.abort();
  await feed;
  assert.equal(r.status, 200, r.text);
  assert.ok(stepSeconds > 2, `the long step took ${stepSeconds.toFixed(1)} s (too short to show anything)`);

  const during = events.filter((e) => e.at > started && e.at < started + stepSeconds * 1000);
  const gaps = during.slice(1).map((e, i) => e.at - during[i].at);
  assert.ok(during.length >= stepSeconds * 2 - 2, `${during.length} events during a ${stepSeconds.toFixed(1)} s step`);
  assert.ok(Math.max(...gaps) < 1000, `the longest gap between events was ${Math.max(...gaps).toFixed(0)} ms`);
  assert.ok(Math.max(...during.map((e) => e.age)) >= 1000, `snapshot ages during the step: ${during.map((e) => e.age).join(',')}`);
  assert.ok(during.some((e) => e.prompts === 2), '--admin-show-prompts: the two live prompts are in the feed');
  t.check();
  t.note(`${during.length} events during a ${stepSeconds.toFixed(1)} s step, ages up to ${Math.max(...during.map((e) => e.age))} ms`);
  fs.rmSync(dir, { recursive: true, force: true });
});
