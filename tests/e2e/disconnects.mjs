// Clients that go away mid-generation abort their requests and return their KV blocks,
// over HTTP (fetch abort, destroyed sockets, a non-streamed request whose socket dies) and over the /v1/ws
// websocket (a cancel message for one of two multiplexed requests, a socket closed mid-stream).
//   node tests/e2e/disconnects.mjs <path-to-parley>
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import WebSocket from 'ws';
import { main, MODEL_NAME, metric, complete, assertNoLeaks, sleep, stream } from './lib.mjs';

const LONG = { max_tokens: 400, ignore_eos: true, temperature: 0.8 };
const abortCount = (base) => metric(base, 'parley:request_success_total', { finished_reason: 'abort' });

// Waits until the abort counter reaches `want` (it is updated when the engine retires the requests).
async function expectAborts(base, want, what) {
  const deadline = Date.now() + 5000;
  let got;
  for (;;) {
    got = await abortCount(base);
    if (got >= want || Date.now() > deadline) break;
    await sleep(100);
  }
  assert.equal(got, want, `${what}: parley:request_success_total{finished_reason="abort"} is ${got}, expected ${want}`);
}

// A streamed completion over node:http whose socket is destroyed after `after` SSE events.
function httpStreamThenDestroy(port, body, after) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/completions', headers: { 'Content-Type': 'application/json' } });
    let events = 0;
    let text = '';
    req.on('response', (res) => {
      if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
      res.on('data', (d) => {
        text += d.toString();
        events = (text.match(/^data: /gm) ?? []).length;
        if (events >= after && !req.destroyed) {
          if (/\[DONE\]/.test(text)) return reject(new Error('the stream finished before the client went away'));
          req.destroy();
          resolve(events);
        }
      });
      res.on('error', () => {});
    });
    req.on('error', (e) => { if (!req.destroyed || events < after) reject(e); });
    req.end(JSON.stringify({ model: MODEL_NAME, ...body, stream: true }));
  });
}

// A non-streamed request on a raw socket; returns a function that destroys the socket.
function rawNonStreamed(port, body) {
  const payload = JSON.stringify({ model: MODEL_NAME, ...body });
  const sock = net.connect(port, '127.0.0.1');
  let reply = '';
  sock.on('data', (d) => { reply += d.toString(); });
  sock.on('error', () => {});
  sock.write(`POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`);
  return () => { const r = reply; sock.destroy(); return r; };
}

function openWs(port) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/ws`);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

main('disconnects', async (parley, t) => {
  const server = await t.start([]);
  const { base, port } = server;
  let aborts = await abortCount(base);

  // --- 10 streams aborted after 2-3 events (5 via fetch + AbortController, 5 by destroying the socket),
  // and a non-streamed request whose socket dies before the reply.
  const killRaw = rawNonStreamed(port, { prompt: 'The big red bus', seed: 99, ...LONG });
  const fetchAborts = Array.from({ length: 5 }, async (_, i) => {
    const controller = new AbortController();
    try {
      const s = await stream(base, '/v1/completions', { prompt: `Story number ${i}`, seed: i, ...LONG }, {
        signal: controller.signal,
        onChunk: (_, n) => (n >= 2 + (i % 2) ? 'abort' : undefined),
      });
      assert.equal(s.status, 200);
      assert.ok(!s.done, `fetch client ${i}: the stream finished before the client went away`);
    } finally {
      controller.abort();
    }
  });
  const destroys = Array.from({ length: 5 }, (_, i) => httpStreamThenDestroy(port, { prompt: `Another tale ${i}`, seed: 50 + i, ...LONG }, 2 + (i % 2)));
  await Promise.all([...fetchAborts, ...destroys]);
  const rawReply = killRaw();
  assert.equal(rawReply, '', `the non-streamed 400-token request already answered: ${rawReply.slice(0, 200)}`);
  await assertNoLeaks(base, { label: 'after 10 aborted streams and a dropped non-streamed request' });
  aborts += 11;
  await expectAborts(base, aborts, '10 aborted streams + 1 dropped non-streamed request');
  t.check();

  // --- websocket: two requests at once, cancel "b"; "a" completes and equals the same request over HTTP.
  const ws = await openWs(port);
  const msgs = { a: [], b: [] };
  const ended = {};
  const endedPromise = new Promise((resolve, reject) => {
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString());
      if (!(m.id in msgs)) return reject(new Error(`message with an unknown id: ${data}`));
      msgs[m.id].push(m);
      if (m.type === 'error') return reject(new Error(`websocket error for ${m.id}: ${data}`));
      if (m.id === 'b' && m.type === 'delta' && msgs.b.length === 2) ws.send(JSON.stringify({ type: 'cancel', id: 'b' }));
      if (m.type === 'final') {
        ended[m.id] = m;
        if (ended.a && ended.b) resolve();
      }
    });
    ws.on('close', () => reject(new Error('the websocket closed before both requests ended')));
  });
  const bodyA = { model: MODEL_NAME, prompt: 'Once upon a time', temperature: 0.8, seed: 42, max_tokens: 40 };
  ws.send(JSON.stringify({ type: 'request', id: 'a', endpoint: 'completions', body: bodyA }));
  ws.send(JSON.stringify({ type: 'request', id: 'b', endpoint: 'completions', body: { model: MODEL_NAME, prompt: 'The dog ran', seed: 7, ...LONG } }));
  await Promise.race([endedPromise, sleep(30000).then(() => { throw new Error(`websocket requests did not end: a=${msgs.a.length} b=${msgs.b.length} messages`); })]);

  for (const id of ['a', 'b']) {
    const deltas = msgs[id].filter((m) => m.type === 'delta');
    assert.ok(deltas.length > 0, `ws ${id}: no delta messages`);
    for (const d of deltas) {
      assert.equal(typeof d.text, 'string', `ws ${id}: delta.text`);
      assert.ok(Array.isArray(d.token_ids), `ws ${id}: delta.token_ids`);
      assert.equal(d.index, 0);
    }
    assert.equal(msgs[id].at(-1).type, 'final', `ws ${id}: the last message is not "final"`);
  }
  const textA = msgs.a.filter((m) => m.type === 'delta').map((m) => m.text).join('');
  const tokensA = msgs.a.filter((m) => m.type === 'delta').flatMap((m) => m.token_ids);
  assert.ok(ended.a.usage && ended.a.usage.completion_tokens > 0, `ws a: final without usage: ${JSON.stringify(ended.a)}`);
  assert.equal(ended.a.usage.completion_tokens, tokensA.length, 'ws a: usage.completion_tokens != number of token ids streamed');
  assert.ok(['stop', 'length'].includes(ended.a.choices[0].finish_reason), `ws a: finish_reason ${ended.a.choices[0].finish_reason}`);
  const httpA = await complete(base, bodyA);
  assert.equal(textA, httpA.choices[0].text, 'ws a: text differs from the same request over HTTP');
  assert.equal(ended.a.usage.completion_tokens, httpA.usage.completion_tokens, 'ws a: usage differs from HTTP');
  const lastB = msgs.b.filter((m) => m.type === 'delta').at(-1);
  const finishB = ended.b.choices?.[0]?.finish_reason ?? lastB.finish_reason;
  assert.equal(finishB, 'abort', `ws b: finish_reason ${finishB} after cancel (final: ${JSON.stringify(ended.b)})`);
  if (lastB.finish_reason) assert.equal(lastB.finish_reason, 'abort', 'ws b: last delta finish_reason');
  assert.ok(msgs.b.filter((m) => m.type === 'delta').flatMap((m) => m.token_ids).length < 400, 'ws b ran to the end');
  t.check();

  // A cancel for an id not running: an error message tagged with the id; the socket stays usable.
  const errPromise = new Promise((resolve) => ws.once('message', (d) => resolve(JSON.parse(d.toString()))));
  msgs.zzz = [];
  ws.send(JSON.stringify({ type: 'cancel', id: 'zzz' }));
  const err = await errPromise;
  assert.equal(err.type, 'error', `cancel of an unknown id: ${JSON.stringify(err)}`);
  assert.equal(err.id, 'zzz');
  assert.ok(err.error?.message, 'cancel of an unknown id: no error.message');
  t.check();
  ws.removeAllListeners('close');
  ws.removeAllListeners('message');
  ws.close();
  await assertNoLeaks(base, { label: 'after the websocket cancel' });
  aborts += 1;
  await expectAborts(base, aborts, 'websocket cancel');
  t.check();

  // --- websocket closed mid-stream (a clean close and an abrupt terminate), two requests in flight each.
  for (const how of ['close', 'terminate']) {
    const s = await openWs(port);
    let deltas = 0;
    await new Promise((resolve, reject) => {
      s.on('message', (d) => {
        const m = JSON.parse(d.toString());
        if (m.type === 'error') return reject(new Error(`ws ${how}: ${d}`));
        if (m.type === 'final') return reject(new Error(`ws ${how}: a 400-token request finished before the socket closed`));
        if (++deltas === 4) { s[how](); resolve(); }
      });
      for (const id of ['x', 'y']) s.send(JSON.stringify({ type: 'request', id, endpoint: id === 'x' ? 'completions' : 'chat.completions',
        body: id === 'x' ? { model: MODEL_NAME, prompt: 'A frog', seed: 3, ...LONG }
                         : { model: MODEL_NAME, messages: [{ role: 'user', content: 'Hi' }], seed: 4, ...LONG } }));
    });
    await assertNoLeaks(base, { label: `after a websocket ${how} mid-stream` });
    aborts += 2;
    await expectAborts(base, aborts, `websocket ${how} with 2 requests in flight`);
    t.check();
  }

  // --- a disconnect storm: 24 streams dropped at random moments (some before the headers); no leak, still serving.
  await Promise.all(Array.from({ length: 24 }, async (_, i) => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), (i * 7) % 40);
    try {
      await stream(base, i % 3 ? '/v1/completions' : '/v1/chat/completions',
                   i % 3 ? { prompt: `Storm ${i}`, seed: i, ...LONG } : { messages: [{ role: 'user', content: `Storm ${i}` }], seed: i, ...LONG },
                   { signal: controller.signal });
    } catch (e) {
      if (e.name !== 'AbortError') throw e;
    }
  }));
  server.assertAlive();
  await assertNoLeaks(base, { label: 'after the disconnect storm' });
  const after = await complete(base, { prompt: 'Once upon a time', max_tokens: 8, temperature: 0 });
  assert.ok(after.choices[0].text.length > 0);
  t.check();
});
