// Prefill/decode disaggregation across processes on loopback: a decode instance that
// prefills on one or two prefill instances gives, stream for stream, what colocated serving gives (greedy,
// seeded, n = 2); prompt logprobs scored on the prefill side equal colocated; n = 4 prefills and transfers once; a speculating decode side keeps every decode step
// uniform; killing the prefill instance mid-run makes the decode side recompute (policy recompute) or fail
// with a clear error (policy fail); no block is left used; restarting the prefill instance restores routing.
//   node tests/e2e/pd.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { main, stream, complete, post, get, assertNoLeaks, readMetrics, metricValue, sleep } from './lib.mjs';

const ADMIN = ['--admin-token', 'adm'];
const OPENINGS = ['Once upon a time', 'The little girl', 'One day, a big dog', 'Tom and Sue', 'There was a red ball',
                  'Lily wanted to', 'The sun was', 'A small bird'];

function request(i, extra = {}) {
  return {
    prompt: `${OPENINGS[i % OPENINGS.length]}${' and'.repeat(Math.floor(i / OPENINGS.length))}`,
    max_tokens: 40,
    ...(i % 3 === 0 ? { temperature: 0 } : { temperature: 0.8, seed: 300 + i }),
    ...(i % 5 === 2 && i % 3 !== 0 ? { n: 2 } : {}),
    ...extra,
  };
}

const kvPortOf = (server) => {
  const m = server.logs().match(/KV transfer actor published on port (\d+)/);
  assert.ok(m, `${server.label}: no "published on port" line`);
  return Number(m[1]);
};

async function adminView(base) {
  const r = await get(base, '/admin/requests', { headers: { Authorization: 'Bearer adm' } });
  assert.equal(r.status, 200, `/admin/requests: ${r.status} ${r.text}`);
  return JSON.parse(r.text);
}

async function waitPeers(base, up, label) {
  const deadline = Date.now() + 10000;
  for (;;) {
    const peers = (await adminView(base)).kv_transfer.peers;
    if (peers.filter((p) => p.up).length === up) return peers;
    if (Date.now() > deadline) assert.fail(`${label}: ${JSON.stringify(peers)} never had ${up} peer(s) up`);
    await sleep(100);
  }
}

const texts = (streams) => streams.map((s) => s.choices.map((c) => `${c.text}|${c.finish}`).join('||'));

async function streamAll(base, bodies) {
  const out = await Promise.all(bodies.map((b) => stream(base, '/v1/completions', b)));
  return out.map((s, i) => {
    assert.equal(s.status, 200, `request ${i}: status ${s.status} ${s.body ?? ''}`);
    assert.deepEqual(s.errors, [], `request ${i}: in-band errors ${JSON.stringify(s.errors)}`);
    assert.ok(s.done, `request ${i}: no [DONE]`);
    const n = bodies[i].n ?? 1;
    return { choices: Array.from({ length: n }, (_, k) => ({ text: s.texts?.[k] ?? (k === 0 ? s.text : ''), finish: s.finishReasons[k] })) };
  });
}

const m = (samples, name) => metricValue(samples, name);

main('pd', async (parley, t) => {
  const colocated = await t.start(ADMIN, { label: 'colocated' });
  const prefill = await t.start([...ADMIN, '--role', 'prefill', '--kv-port', '0'], { label: 'prefill A' });
  const kvPort = kvPortOf(prefill);
  const decode = await t.start([...ADMIN, '--role', 'decode', '--prefill-peers', `127.0.0.1:${kvPort}`], { label: 'decode' });
  await waitPeers(decode.base, 1, 'decode');

  // 1P + 1D against colocated: 24 concurrent streams, greedy and seeded, some with n = 2.
  const bodies = Array.from({ length: 24 }, (_, i) => request(i));
  const want = texts(await streamAll(colocated.base, bodies));
  assert.deepEqual(texts(await streamAll(decode.base, bodies)), want, '1P+1D differs from colocated');
  t.check();
  let d = await assertNoLeaks(decode.base, { label: 'decode' });
  let p = await assertNoLeaks(prefill.base, { label: 'prefill' });
  assert.equal(m(d, 'parley:prefill_tokens_computed_total'), 0, 'the decode instance computed prompt tokens');
  assert.ok(m(p, 'parley:prefill_tokens_computed_total') > 0, 'the prefill instance computed nothing');
  assert.equal(m(d, 'parley:kv_transfer_latency_seconds_count'), 24, 'one transfer per request (n = 2 included)');
  assert.equal(m(d, 'parley:kv_blocks_transferred_total'), m(p, 'parley:kv_blocks_transferred_total'));
  assert.equal(m(d, 'parley:kv_transfer_bytes_total'), m(p, 'parley:kv_transfer_bytes_total'));
  assert.equal(m(d, 'parley:kv_transfer_failures_total'), 0);
  t.check();

  // Prompt logprobs (and echo with logprobs) are scored on the prefill instance and travel with the KV: the
  // decode instance answers what colocated serving answers, computing no prompt token.
  const scoredBody = { prompt: 'Tom and Sue went to the park', max_tokens: 8, temperature: 0, echo: true, logprobs: 2,
                       prompt_logprobs: 3, n: 1 };
  const scoredHere = await complete(colocated.base, scoredBody);
  const scoredThere = await complete(decode.base, scoredBody);
  assert.equal(scoredThere.choices[0].prompt_logprobs.length, scoredThere.usage.prompt_tokens);
  assert.deepEqual(scoredThere.choices, scoredHere.choices, 'prompt logprobs over PD differ from colocated');
  d = await assertNoLeaks(decode.base, { label: 'decode' }), p = await assertNoLeaks(prefill.base, { label: 'prefill' });
  assert.equal(m(d, 'parley:prefill_tokens_computed_total'), 0, 'the decode instance scored the prompt itself');
  t.check();

  // n = 4: one prefill of the prompt and one transfer of its blocks; choice i equals seed + i alone.
  const prompt = 'Lily and Ben went to the park to play with their new red ball and a big blue kite';
  const tok = await post(colocated.base, '/tokenize', { prompt });
  const promptTokens = tok.json.tokens.length;
  const [blocksBefore, computedBefore] = [m(d, 'parley:kv_blocks_transferred_total'), m(p, 'parley:prefill_tokens_computed_total')];
  const four = await complete(decode.base, { prompt, n: 4, seed: 70, temperature: 0.9, max_tokens: 30 });
  d = await assertNoLeaks(decode.base), p = await assertNoLeaks(prefill.base);
  assert.equal(m(p, 'parley:prefill_tokens_computed_total') - computedBefore, promptTokens, 'n = 4 prefilled more than once');
  assert.equal(m(d, 'parley:kv_blocks_transferred_total') - blocksBefore, Math.ceil(promptTokens / 16), 'n = 4 transferred more than once');
  for (let i = 0; i < 4; i++) {
    const alone = await complete(colocated.base, { prompt, seed: 70 + i, temperature: 0.9, max_tokens: 30 });
    assert.equal(four.choices.find((c) => c.index === i).text, alone.choices[0].text, `n = 4 choice ${i} differs from seed + ${i}`);
  }
  t.check();

  // 2P + 1D, least loaded, with n-gram speculation on the decode side: the same streams; both prefill
  // instances served; every decode step uniform.
  const prefillB = await t.start([...ADMIN, '--role', 'prefill', '--kv-port', '0'], { label: 'prefill B' });
  const decode2 = await t.start([...ADMIN, '--role', 'decode', '--prefill-routing', 'least_loaded',
    '--prefill-peers', `127.0.0.1:${kvPort},127.0.0.1:${kvPortOf(prefillB)}`,
    '--speculative-config', '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2}'], { label: 'decode 2P' });
  await waitPeers(decode2.base, 2, 'decode 2P');
  assert.deepEqual(texts(await streamAll(decode2.base, bodies)), want, '2P+1D differs from colocated');
  const d2 = await assertNoLeaks(decode2.base, { label: 'decode 2P' });
  const pb = await assertNoLeaks(prefillB.base, { label: 'prefill B' });
  assert.ok(m(pb, 'parley:kv_blocks_transferred_total') > 0, 'prefill B served nothing');
  assert.equal(m(d2, 'parley:uniform_decode_steps_total'), m(d2, 'parley:decode_steps_total'), 'a decode step was not uniform');
  assert.ok(m(d2, 'parley:decode_steps_total') > 0);
  await decode2.stop();
  await prefillB.stop();
  t.check();

  // Kill prefill A while 24 requests are on their way: in-flight and new ones complete by local recompute.
  const failing = await t.start([...ADMIN, '--role', 'decode', '--prefill-peers', `127.0.0.1:${kvPort}`,
    '--kv-load-failure-policy', 'fail', '--kv-transfer-timeout', '2'], { label: 'decode (fail policy)' });
  await waitPeers(failing.base, 1, 'decode (fail policy)');
  const long = bodies.map((b) => ({ ...b, max_tokens: 120, ignore_eos: true }));
  const longWant = texts(await streamAll(colocated.base, long));
  const running = streamAll(decode.base, long);
  // The same on the fail-policy instance: each stream completes as colocated or ends with the clear error.
  const runningFail = Promise.all(long.map((b) => stream(failing.base, '/v1/completions', b)));
  await sleep(5);
  prefill.proc.kill('SIGKILL');
  t.servers.splice(t.servers.indexOf(prefill), 1);  // killed on purpose: no clean exit to check
  assert.deepEqual(texts(await running), longWant, 'recompute after the prefill instance died differs from colocated');
  (await runningFail).forEach((s, i) => {
    assert.equal(s.status, 200, `fail policy, stream ${i}: ${s.status}`);
    assert.ok(s.done, `fail policy, stream ${i}: no [DONE]`);
    if (s.errors.length) assert.match(s.errors[0].message, /prefill instance failed this request/);
    else assert.equal(texts([{ choices: Array.from({ length: long[i].n ?? 1 }, (_, k) => ({ text: s.texts[k], finish: s.finishReasons[k] })) }])[0], longWant[i]);
  });
  assert.deepEqual(texts(await streamAll(decode.base, bodies.slice(0, 6))), want.slice(0, 6), 'new requests with no prefill instance');
  d = await assertNoLeaks(decode.base, { label: 'decode after the kill' });
  assert.ok(m(d, 'parley:kv_transfer_failures_total') > 0, 'no transfer failed');
  assert.ok(m(d, 'parley:prefill_tokens_computed_total') > 0, 'nothing was recomputed locally');
  t.check();

  // With --kv-load-failure-policy fail: a clear 503 error, streamed in-band; nothing leaked.
  const failed = await post(failing.base, '/v1/completions', request(0));
  assert.equal(failed.status, 503, `fail policy: ${failed.status} ${failed.text}`);
  assert.match(failed.json.error.message, /prefill instance failed this request/);
  const failedStream = await stream(failing.base, '/v1/completions', request(1));
  assert.equal(failedStream.errors.length, 1, `fail policy, streamed: ${JSON.stringify(failedStream.errors)}`);
  await assertNoLeaks(failing.base, { label: 'decode (fail policy)' });
  t.check();

  // Restart prefill A on the same port: routing to it is restored.
  const again = await t.start([...ADMIN, '--role', 'prefill', '--kv-port', String(kvPort)], { label: 'prefill A again' });
  await waitPeers(decode.base, 1, 'decode after the restart');
  const before = m(await readMetrics(decode.base), 'parley:kv_blocks_transferred_total');
  assert.deepEqual(texts(await streamAll(decode.base, bodies.slice(0, 6))), want.slice(0, 6));
  assert.ok(m(await readMetrics(decode.base), 'parley:kv_blocks_transferred_total') > before, 'no transfer after the restart');
  await assertNoLeaks(again.base, { label: 'prefill A again' });
  await assertNoLeaks(decode.base, { label: 'decode at the end' });
  t.check();

  // A prefill instance that stalls (SIGSTOP: its connection stays up): transfers time out and are prefilled
  // locally; when it resumes, its late KV is acknowledged and dropped, and its blocks are freed.
  const stalled = await t.start([...ADMIN, '--role', 'prefill', '--kv-port', '0'], { label: 'prefill S' });
  const patient = await t.start([...ADMIN, '--role', 'decode', '--prefill-peers', `127.0.0.1:${kvPortOf(stalled)}`,
    '--kv-transfer-timeout', '1'], { label: 'decode (timeout 1 s)' });
  await waitPeers(patient.base, 1, 'decode (timeout 1 s)');
  stalled.proc.kill('SIGSTOP');
  const started = Date.now();
  assert.deepEqual(texts(await streamAll(patient.base, bodies.slice(0, 6))), want.slice(0, 6), 'timed-out transfers recomputed');
  assert.ok(Date.now() - started >= 900, 'the requests did not wait for the transfer deadline');
  stalled.proc.kill('SIGCONT');
  const ps = await assertNoLeaks(patient.base, { label: 'decode (timeout 1 s)' });
  assert.equal(m(ps, 'parley:kv_transfer_failures_total'), 6);
  await assertNoLeaks(stalled.base, { timeoutMs: 10000, label: 'prefill S after resuming' });
  const deadline = Date.now() + 10000;
  while ((await adminView(stalled.base)).kv_transfer.held_for_decode > 0 && Date.now() < deadline) await sleep(100);
  assert.equal((await adminView(stalled.base)).kv_transfer.held_for_decode, 0, 'prefill S still holds blocks');
  t.check();

  // A prefill instance that refuses a prompt (its context is shorter): the decode side prefills it itself.
  const small = await t.start([...ADMIN, '--role', 'prefill', '--kv-port', '0', '--max-model-len', '32'], { label: 'prefill R' });
  const picky = await t.start([...ADMIN, '--role', 'decode', '--prefill-peers', `127.0.0.1:${kvPortOf(small)}`], { label: 'decode (refused)' });
  await waitPeers(picky.base, 1, 'decode (refused)');
  const longPrompt = { prompt: 'Once upon a time there was a little girl. '.repeat(5), max_tokens: 20, temperature: 0 };
  assert.equal((await complete(picky.base, longPrompt)).choices[0].text, (await complete(colocated.base, longPrompt)).choices[0].text);
  const pr = await assertNoLeaks(picky.base, { label: 'decode (refused)' });
  assert.equal(m(pr, 'parley:kv_transfer_failures_total'), 1);
  assert.match(picky.logs(), /the prefill instance refused it: the prompt has \d+ tokens; the context holds 32/);
  await assertNoLeaks(small.base, { label: 'prefill R' });
  t.check();

  // A prefill instance whose KV has another layout (block size 32): it refuses the request before prefilling (the
  // decode side's layout travels with it) and the decode side prefills.
  const wide = await t.start([...ADMIN, '--role', 'prefill', '--kv-port', '0', '--block-size', '32'], { label: 'prefill W' });
  const strict = await t.start([...ADMIN, '--role', 'decode', '--prefill-peers', `127.0.0.1:${kvPortOf(wide)}`], { label: 'decode (layout)' });
  await waitPeers(strict.base, 1, 'decode (layout)');
  assert.deepEqual(texts(await streamAll(strict.base, bodies.slice(0, 4))), want.slice(0, 4), 'a KV of another layout was used');
  const sl = await assertNoLeaks(strict.base, { label: 'decode (layout)' });
  assert.equal(m(sl, 'parley:kv_transfer_failures_total'), 4);
  assert.equal(m(sl, 'parley:kv_blocks_transferred_total'), 0);
  assert.ok(m(sl, 'parley:prefill_tokens_computed_total') > 0);
  assert.match(strict.logs(), /KV transfer failed \(the prefill instance refused it: the KV does not fit this instance/);
  await assertNoLeaks(wide.base, { timeoutMs: 10000, label: 'prefill W' });
  t.check();

  // A decode instance that dies with transfers on their way: the prefill instance frees their blocks when
  // the leases (--kv-transfer-timeout) run out. The order is forced by signals, not delays (a 30 ms sleep, then
  // a 1 ms poll, both missed the window on fast runs): the prefill instance is frozen while every prompt is
  // routed to it, then the decode instance is frozen so no acknowledgement comes back, the prefill instance
  // resumes and pushes its KV, and the decode instance is killed once KV waits for an acknowledgement.
  const leased = await t.start([...ADMIN, '--role', 'prefill', '--kv-port', '0', '--kv-transfer-timeout', '2'], { label: 'prefill C' });
  const doomed = await t.start([...ADMIN, '--role', 'decode', '--prefill-peers', `127.0.0.1:${kvPortOf(leased)}`], { label: 'decode (killed)' });
  await waitPeers(doomed.base, 1, 'decode (killed)');
  leased.proc.kill('SIGSTOP');
  const orphans = Array.from({ length: 16 }, (_, i) => stream(doomed.base, '/v1/completions', { ...request(i), prompt: 'Once upon a time '.repeat(20) + i })
    .catch(() => null));
  for (let i = 0; i < 500 && (await adminView(doomed.base)).kv_transfer.transfers_in_flight < 16; ++i) await sleep(10);
  assert.ok((await adminView(doomed.base)).kv_transfer.transfers_in_flight >= 16, 'the prompts were not all routed to prefill C');
  await sleep(200);  // the routed prompts leave the decode instance's socket for prefill C's (frozen) one
  doomed.proc.kill('SIGSTOP');
  leased.proc.kill('SIGCONT');
  for (let i = 0; i < 500 && (await adminView(leased.base)).kv_transfer.held_for_decode === 0; ++i) await sleep(10);
  assert.ok((await adminView(leased.base)).kv_transfer.held_for_decode > 0, 'prefill C holds no KV for the frozen decode instance');
  doomed.proc.kill('SIGKILL');
  t.servers.splice(t.servers.indexOf(doomed), 1);
  await Promise.all(orphans);
  const c = await assertNoLeaks(leased.base, { timeoutMs: 10000, label: 'prefill C after its decode instance died' });
  assert.ok(m(c, 'parley:kv_blocks_transferred_total') > 0, 'prefill C pushed nothing before the kill');
  const held = (await adminView(leased.base)).kv_transfer.held_for_decode;
  assert.equal(held, 0, 'blocks still held for a dead decode instance');
  assert.match(leased.logs(), /no acknowledgement of its KV within 2 s; freeing its blocks/, 'no lease ran out: the kill came too late');
  t.check();
});
