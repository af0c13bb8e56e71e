// --kv-secret: a decode instance with the prefill instance's secret gets its KV; one with another secret, or
// none, gets no KV and sends it no prompt (the prefill instance computes nothing): its requests prefill locally
// and equal colocated serving; parley:kv_peer_auth_failures_total counts the failed authentication on the decode
// side and each refused prompt on the prefill side. A decode
// instance with a secret refuses a prefill instance that has none.
//   node tests/e2e/pd_auth.mjs <path-to-parley>
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { main, complete, get, readMetrics, metricValue, assertNoLeaks, sleep } from './lib.mjs';

const ADMIN = ['--admin-token', 'adm'];
const BODIES = Array.from({ length: 6 }, (_, i) => ({
  prompt: `Once upon a time ${'there was a dog '.repeat(i + 2)}`, max_tokens: 24,
  ...(i % 2 ? { temperature: 0.8, seed: 40 + i } : { temperature: 0 }),
}));

const kvPortOf = (server) => Number(server.logs().match(/KV transfer actor published on port (\d+)/)[1]);
const metricOf = async (base, name) => metricValue(await readMetrics(base), name);

function secretFile(dir, name, text) {
  const f = path.join(dir, name);
  fs.writeFileSync(f, text + '\n');
  return f;
}

async function peersUp(base) {
  const r = await get(base, '/admin/requests', { headers: { Authorization: 'Bearer adm' } });
  return JSON.parse(r.text).kv_transfer.peers.filter((p) => p.up).length;
}

async function until(what, fn, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const outputs = async (base) => Promise.all(BODIES.map(async (b) => (await complete(base, b)).choices[0].text));

main('pd_auth', async (parley, t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-kv-secret-'));
  const secretA = secretFile(dir, 'a', 'a-secret-of-thirty-two-characters');
  const secretB = secretFile(dir, 'b', 'another-secret-thirty-two-chars!');
  const colocated = await t.start([], { label: 'colocated' });
  const want = await outputs(colocated.base);

  // Too short a secret stops the start, naming the file.
  const short = secretFile(dir, 'short', 'abc');
  await assert.rejects(t.start(['--role', 'prefill', '--kv-port', '0', '--kv-secret', short], { label: 'short secret', timeoutMs: 20000 }),
                       /at least 16/);

  const prefill = await t.start([...ADMIN, '--role', 'prefill', '--kv-port', '0', '--kv-secret', secretA], { label: 'prefill A' });
  const peer = `127.0.0.1:${kvPortOf(prefill)}`;

  // The same secret: authenticated, the KV comes from the prefill instance.
  const good = await t.start([...ADMIN, '--role', 'decode', '--prefill-peers', peer, '--kv-secret', secretA], { label: 'decode A' });
  await until('the prefill instance up for decode A', async () => (await peersUp(good.base)) === 1);
  assert.deepEqual(await outputs(good.base), want, 'decode A equals colocated');
  assert.ok(await metricOf(good.base, 'parley:kv_blocks_transferred_total') > 0, 'decode A received KV');
  assert.equal(await metricOf(good.base, 'parley:kv_peer_auth_failures_total'), 0);
  const computedBefore = await metricOf(prefill.base, 'parley:prefill_tokens_computed_total');
  assert.ok(computedBefore > 0, 'the prefill instance computed decode A\'s prompts');
  await good.stop();
  t.check();

  // Another secret: the prefill instance is never used; its proof fails, nothing moves.
  const wrong = await t.start([...ADMIN, '--role', 'decode', '--prefill-peers', peer, '--kv-secret', secretB], { label: 'decode B' });
  await until('decode B to count the failed authentication', async () => (await metricOf(wrong.base, 'parley:kv_peer_auth_failures_total')) >= 1);
  assert.equal(await peersUp(wrong.base), 0, 'the prefill instance is not up for decode B');
  assert.deepEqual(await outputs(wrong.base), want, 'decode B prefills locally and equals colocated');
  assert.equal(await metricOf(wrong.base, 'parley:kv_blocks_transferred_total'), 0, 'decode B received no KV');
  assert.equal(await metricOf(prefill.base, 'parley:prefill_tokens_computed_total'), computedBefore, 'no prompt of decode B was computed there');
  assert.match(wrong.logs(), /failed authentication \(its answer does not prove the secret\)/);
  await wrong.stop();
  t.check();

  // No secret: prompts reach the prefill instance's port but are refused unread; the decode side prefills locally.
  const failuresBefore = await metricOf(prefill.base, 'parley:kv_peer_auth_failures_total');
  const open = await t.start([...ADMIN, '--role', 'decode', '--prefill-peers', peer], { label: 'decode (no secret)' });
  await until('the prefill instance up for the decode instance without a secret', async () => (await peersUp(open.base)) === 1);
  assert.deepEqual(await outputs(open.base), want, 'the decode instance without a secret equals colocated');
  assert.equal(await metricOf(open.base, 'parley:kv_blocks_transferred_total'), 0);
  assert.equal(await metricOf(prefill.base, 'parley:prefill_tokens_computed_total'), computedBefore);
  assert.ok(await metricOf(prefill.base, 'parley:kv_peer_auth_failures_total') >= failuresBefore + BODIES.length,
            'each refused prompt is counted');
  await assertNoLeaks(open.base, { label: 'decode without a secret' });
  await open.stop();
  t.check();

  // A decode instance with a secret refuses a prefill instance without one.
  const bare = await t.start([...ADMIN, '--role', 'prefill', '--kv-port', '0'], { label: 'prefill (no secret)' });
  assert.match(bare.logs(), /accepts prompts and KV from any peer/, 'the warning at start');
  const careful = await t.start([...ADMIN, '--role', 'decode', '--prefill-peers', `127.0.0.1:${kvPortOf(bare)}`, '--kv-secret', secretA],
                                { label: 'decode (careful)' });
  await until('the careful decode instance to refuse', async () => (await metricOf(careful.base, 'parley:kv_peer_auth_failures_total')) >= 1);
  assert.deepEqual(await outputs(careful.base), want);
  assert.equal(await metricOf(bare.base, 'parley:prefill_tokens_computed_total'), 0, 'nothing was sent to the prefill instance');
  assert.match(careful.logs(), /failed authentication \(it has no --kv-secret\)/);
  await assertNoLeaks(prefill.base, { label: 'prefill A' });
  t.check();
  fs.rmSync(dir, { recursive: true, force: true });
});
