// HTTP/1.1 connections as clients use them: 50 generations through one keep-alive connection; pipelined
// requests answered in order (and a client leaving in the middle of a pipelined stream aborts it); the
// pipelining limit; malformed requests answered with their status before a graceful close (400, 408, 413,
// 431, 505), 20 uploads of 64 MB each reading their 413 instead of a reset; websocket close codes 1009, 1007
// and 1002 after the answers already produced, with nothing leaked; the limits: --max-connections (503),
// --max-ws-requests (429), and a client trickling one byte a second cut by --read-timeout holding nothing.
//   node tests/e2e/http_connections.mjs <path-to-parley>
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import WebSocket from 'ws';
import { main, MODEL_NAME, metric, metricValue, parseMetrics, assertNoLeaks, sleep } from './lib.mjs';

const MAX_BODY = 1 << 20;
const READ_TIMEOUT_S = 2;
const abortCount = (base) => metric(base, 'parley:request_success_total', { finished_reason: 'abort' });

// ---------- a raw HTTP/1.1 response reader (status, headers, Content-Length or chunked body) ----------

function parseResponses(buf) {
  const out = [];
  let at = 0;
  for (;;) {
    const headEnd = buf.indexOf('\r\n\r\n', at);
    if (headEnd < 0) break;
    const lines = buf.subarray(at, headEnd).toString('latin1').split('\r\n');
    const status = Number(lines[0].split(' ')[1]);
    const headers = Object.fromEntries(lines.slice(1).map((l) => {
      const i = l.indexOf(':');
      return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()];
    }));
    let p = headEnd + 4;
    let body;
    if (headers['transfer-encoding'] === 'chunked') {
      const parts = [];
      let complete = false;
      for (;;) {
        const lineEnd = buf.indexOf('\r\n', p);
        if (lineEnd < 0) break;
        const size = parseInt(buf.subarray(p, lineEnd).toString('latin1'), 16);
        if (buf.length < lineEnd + 2 + size + 2) break;
        parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
        p = lineEnd + 2 + size + 2;
        if (size === 0) { complete = true; break; }
      }
      if (!complete) break;
      body = Buffer.concat(parts);
    } else {
      const n = Number(headers['content-length'] ?? 0);
      if (buf.length < p + n) break;
      body = buf.subarray(p, p + n);
      p += n;
    }
    out.push({ status, headers, text: body.toString('utf8') });
    at = p;
  }
  return { responses: out, rest: buf.subarray(at) };
}

// Writes `bytes` on a fresh connection and collects everything until the server closes (or `timeoutMs`).
// `reset` tells whether the connection ended with ECONNRESET/EPIPE instead of a clean close.
function rawExchange(port, bytes, { timeoutMs = 10000, holdOpenMs = 0 } = {}) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    const chunks = [];
    let reset = null;
    const timer = setTimeout(() => { sock.destroy(); finish(true); }, timeoutMs);
    let done = false;
    const finish = (timedOut = false) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const all = Buffer.concat(chunks);
      resolve({ ...parseResponses(all), raw: all, reset, timedOut });
    };
    sock.on('data', (d) => chunks.push(d));
    sock.on('error', (e) => { reset = e.code; });
    sock.on('close', () => finish());
    sock.on('connect', async () => {
      for (const b of Array.isArray(bytes) ? bytes : [bytes]) {
        if (typeof b === 'number') await sleep(b);  // a pause between pieces
        else sock.write(b);
      }
      if (holdOpenMs) await sleep(holdOpenMs);
    });
  });
}

const jsonRequest = (route, body, extra = '') => {
  const payload = JSON.stringify({ model: MODEL_NAME, ...body });
  return `POST ${route} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${extra}` +
         `Content-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`;
};
const sseData = (text) => text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
const streamedText = (text) => sseData(text).filter((d) => d !== '[DONE]').map((d) => JSON.parse(d))
  .map((j) => j.choices?.[0]?.text ?? j.choices?.[0]?.delta?.content ?? '').join('');

// node:http through one agent: returns {status, text, reused}.
function agentRequest(agent, port, method, path, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, agent,
                               headers: body ? { 'Content-Type': 'application/json' } : {} }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text, reused: req.reusedSocket, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body ? JSON.stringify({ model: MODEL_NAME, ...body }) : undefined);
  });
}

async function keepAlive(t, port) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const metricsVia = async () => metricValue(parseMetrics((await agentRequest(agent, port, 'GET', '/metrics')).text),
                                             'parley:http_connections_total', { model_name: undefined });
  const before = await metricsVia();
  let reused = 0;
  const alone = new Map();
  for (let i = 0; i < 50; i++) {
    const chat = i % 4 >= 2;
    const stream = i % 2 === 1;
    const seed = 100 + (i >> 1);  // a pair: the same request plain and streamed
    const body = chat ? { messages: [{ role: 'user', content: `Story ${seed}` }] } : { prompt: `Story ${seed}` };
    const r = await agentRequest(agent, port, 'POST', chat ? '/v1/chat/completions' : '/v1/completions',
                                 { ...body, max_tokens: 12, temperature: 1, seed, stream });
    assert.equal(r.status, 200, `keep-alive request ${i}: ${r.text.slice(0, 200)}`);
    assert.equal(r.headers.connection, 'keep-alive', `request ${i}: Connection: ${r.headers.connection}`);
    if (r.reused) reused += 1;
    let text;
    if (stream) {
      assert.equal(sseData(r.text).at(-1), '[DONE]', `request ${i}: stream ends with [DONE]`);
      text = streamedText(r.text);
    } else {
      const j = JSON.parse(r.text);
      text = chat ? j.choices[0].message.content : j.choices[0].text;
    }
    const key = `${chat}:${seed}`;
    if (alone.has(key)) assert.equal(text, alone.get(key), `request ${i}: streamed text equals the plain one`);
    else alone.set(key, text);
  }
  const after = await metricsVia();
  assert.equal(reused, 50, `every generation reused the connection (${reused} of 50)`);
  assert.equal(after, before, `the server accepted ${after - before} connections during 50 keep-alive generations`);
  agent.destroy();
  t.check();
  t.note('50 generations on 1 connection');
}

async function pipelining(t, base, port) {
  const completion = { prompt: 'The little dog', max_tokens: 10, temperature: 1, seed: 7 };
  const lone = await rawExchange(port, jsonRequest('/v1/completions', completion, 'Connection: close\r\n'));
  const loneText = JSON.parse(lone.responses[0].text).choices[0].text;

  const r = await rawExchange(port, jsonRequest('/v1/completions', completion) +
    jsonRequest('/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], max_tokens: 6, stream: true }) +
    'GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
  assert.equal(r.responses.length, 3, `three pipelined requests, ${r.responses.length} responses: ${r.raw.toString().slice(0, 400)}`);
  const [a, b, c] = r.responses;
  assert.equal(a.status, 200);
  assert.equal(JSON.parse(a.text).object, 'text_completion', 'first answer: the completion');
  assert.equal(JSON.parse(a.text).choices[0].text, loneText, 'the pipelined completion equals the same request alone');
  assert.equal(b.headers['content-type'], 'text/event-stream', 'second answer: the chat stream');
  assert.equal(sseData(b.text).at(-1), '[DONE]');
  assert.equal(JSON.parse(sseData(b.text)[0]).object, 'chat.completion.chunk');
  assert.equal(JSON.parse(c.text).object, 'list', 'third answer: /v1/models');
  assert.equal(r.reset, null);
  t.check();

  // 20 pipelined at once: 16 wait behind... the reader takes 16, the 17th gets 503 and the connection closes.
  const many = await rawExchange(port, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(20));
  const statuses = many.responses.map((x) => x.status);
  assert.deepEqual(statuses, [...Array(16).fill(200), 503], `20 pipelined: ${statuses.join(',')}`);
  assert.equal(many.responses.at(-1).headers.connection, 'close');
  assert.match(JSON.parse(many.responses.at(-1).text).error.message, /pipelined/);
  t.check();

  // A client that leaves in the middle of the second pipelined stream: that request is aborted.
  const aborts = await abortCount(base);
  await new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    sock.on('error', () => {});
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const { responses, rest } = parseResponses(buf);
      // The first stream is whole; the second has started streaming.
      if (responses.length === 1 && sseData(rest.toString()).length >= 2) { sock.destroy(); resolve(); }
      if (responses.length > 1) reject(new Error('the second stream finished before the client left'));
    });
    sock.on('connect', () => sock.write(
      jsonRequest('/v1/completions', { prompt: 'One', max_tokens: 4, stream: true }) +
      jsonRequest('/v1/completions', { prompt: 'Two', max_tokens: 400, ignore_eos: true, stream: true })));
  });
  const deadline = Date.now() + 5000;
  while ((await abortCount(base)) < aborts + 1 && Date.now() < deadline) await sleep(50);
  assert.equal(await abortCount(base), aborts + 1, 'the abandoned pipelined stream was aborted');
  await assertNoLeaks(base, { label: 'pipelined disconnect' });
  t.check();
}

async function malformed(t, base, port) {
  const cases = [
    ['a 200 KB header', 'GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ' + 'a'.repeat(200000) + '\r\n\r\n', 431],
    ['a negative Content-Length', 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n', 400],
    ['bytes that are not HTTP', Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x0d, 0x0a, 0x0d, 0x0a]), 400],
    ['a bad request line', 'GET\r\n\r\n', 400],
    ['bad chunking', 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n', 400],
    ['HTTP/2.0', 'GET /health HTTP/2.0\r\nHost: x\r\n\r\n', 505],
    ['a body over the limit', `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: ${MAX_BODY + 1}\r\n\r\n`, 413],
    ['a request that stalls', ['POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{"a"'], 408],
  ];
  for (const [what, bytes, want] of cases) {
    const r = await rawExchange(port, bytes, { holdOpenMs: want === 408 ? (READ_TIMEOUT_S + 2) * 1000 : 0 });
    assert.equal(r.responses.length, 1, `${what}: one answer before the close, got ${r.raw.toString('latin1').slice(0, 200)}`);
    assert.equal(r.responses[0].status, want, `${what}: status`);
    assert.equal(r.responses[0].headers.connection, 'close', `${what}: Connection: close`);
    assert.ok(JSON.parse(r.responses[0].text).error.message.length > 5, `${what}: an error body`);
    assert.equal(r.reset, null, `${what}: closed cleanly, not reset`);
  }
  t.check();

  // 20 uploads of 64 MB: each reads its 413 (none reset) while the server drains what the client still sends.
  const big = Buffer.alloc(64 << 20, 0x61);
  for (let i = 0; i < 20; i++) {
    const r = await new Promise((resolve) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/completions', agent: false,
                                 headers: { 'Content-Type': 'application/json', 'Content-Length': big.length } }, (res) => {
        let text = '';
        res.on('data', (d) => { text += d; });
        res.on('end', () => resolve({ status: res.statusCode, text }));
        res.on('error', (e) => resolve({ error: e.code }));
      });
      req.on('error', (e) => resolve({ error: e.code ?? e.message }));
      req.end(big);
    });
    assert.equal(r.error, undefined, `upload ${i}: ${r.error} instead of the 413`);
    assert.equal(r.status, 413, `upload ${i}`);
    assert.match(JSON.parse(r.text).error.message, new RegExp(String(MAX_BODY)));
  }
  const refused = parseMetrics(await (await fetch(`${base}/metrics`)).text());
  assert.equal(metricValue(refused, 'parley:http_refused_requests_total', { model_name: undefined, status: '413' }), 21);
  const ok = await (await fetch(`${base}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: MODEL_NAME, prompt: 'Still', max_tokens: 4 }) })).json();
  assert.equal(ok.choices[0].finish_reason, 'length', 'the server keeps serving');
  t.check();
  t.note('20 x 64 MB uploads read their 413');
}

// A websocket client: resolves with {messages, code} when the server closes.
function wsSession(port, act) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/ws`);
    const messages = [];
    ws.on('message', (m) => messages.push(JSON.parse(m.toString())));
    ws.on('close', (code) => resolve({ messages, code }));
    ws.on('error', () => {});
    ws.on('open', () => act(ws, messages).catch(reject));
  });
}
const wsRequest = (id, body) => JSON.stringify({ type: 'request', id, endpoint: 'completions',
                                                 body: { model: MODEL_NAME, prompt: 'Once', ...body } });
const finalOf = (messages, id) => messages.find((m) => m.id === id && m.type === 'final');

// Upgrades a raw socket to a websocket, writes `frames` and resolves with the code of the server's close frame
// (rejects when none arrives within 3 s).
function rawWebsocketClose(port, frames) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error('no close frame within 3 s'));
    }, 3000);
    let buf = Buffer.alloc(0);
    let upgraded = false;
    sock.on('error', reject);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (!upgraded) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        assert.match(buf.subarray(0, end).toString(), /^HTTP\/1\.1 101/);
        upgraded = true;
        buf = buf.subarray(end + 4);
        sock.write(frames);
      }
      if (buf.length >= 4) {
        clearTimeout(timer);
        assert.equal(buf[0], 0x88, 'a close frame');
        resolve(buf.readUInt16BE(2));
        sock.destroy();
      }
    });
    sock.on('connect', () => sock.write('GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
      'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'));
  });
}

async function websocket(t, base, port) {
  // 1009: a message one byte over the limit right behind two requests; both end (their final messages arrive)
  // before the close. It is built beforehand and kept small: the client masks every byte before the frame leaves,
  // and 5 MB took long enough that the tiny model finished b's 400 tokens first.
  const oversized = 'x'.repeat(MAX_BODY + 1);
  for (let i = 0; i < 3; i++) {
    const r = await wsSession(port, async (ws) => {
      ws.send(wsRequest('a', { max_tokens: 4, stream: true }));
      ws.send(wsRequest('b', { max_tokens: 400, ignore_eos: true, stream: true }));
      ws.send(oversized);
    });
    assert.equal(r.code, 1009, `oversized message: close code ${r.code}`);
    for (const id of ['a', 'b']) assert.ok(finalOf(r.messages, id), `request ${id}'s final message arrived before the close`);
    assert.equal(finalOf(r.messages, 'b').choices[0].finish_reason, 'abort', 'the long request ended with abort');
  }
  await assertNoLeaks(base, { label: 'websocket 1009' });
  t.check();

  // 1007: a text message that is not UTF-8, after one answer and while another request runs.
  const r7 = await wsSession(port, async (ws, messages) => {
    ws.send(wsRequest('a', { max_tokens: 4 }));
    while (!finalOf(messages, 'a')) await sleep(10);
    ws.send(wsRequest('b', { max_tokens: 400, ignore_eos: true, stream: true }));
    while (!messages.some((m) => m.id === 'b')) await sleep(5);
    ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false });
  });
  assert.equal(r7.code, 1007, `invalid UTF-8: close code ${r7.code}`);
  assert.equal(finalOf(r7.messages, 'a').choices[0].finish_reason, 'length');
  await assertNoLeaks(base, { label: 'websocket 1007' });
  t.check();

  // 1002: an unmasked client frame (RFC 6455 5.1), on a raw socket.
  const code = await rawWebsocketClose(port, Buffer.from([0x81, 0x02, 0x68, 0x69]));  // FIN text "hi", no mask bit
  assert.equal(code, 1002, `unmasked frame: close code ${code}`);
  t.check();

  // 1009 from the frame's announced length: 4 KiB of a 5 MiB message, then nothing more; the close must not wait
  // for the body limit's worth of bytes to arrive.
  const header = Buffer.from([0x81, 0xff, 0, 0, 0, 0, 0, 0x50, 0, 0, 1, 2, 3, 4]);  // FIN text, masked, 64-bit length
  const early = await rawWebsocketClose(port, Buffer.concat([header, Buffer.alloc(4096, 0x61)]));
  assert.equal(early, 1009, `announced 5 MiB: close code ${early}`);
  t.check();
  t.note('websocket 1009, 1007, 1002');
}

async function limits(t) {
  // --idle-timeout 1: the connection that polled /health at the start closes before the count matters.
  const { base, port } = await t.start(['--max-connections', '3', '--max-ws-requests', '2', '--read-timeout', String(READ_TIMEOUT_S),
                                        '--idle-timeout', '1'], { label: 'limits' });
  await sleep(1500);
  // Three idle connections are the limit; the fourth is answered 503 and closed; with one gone, a new one is served.
  const idle = await Promise.all([0, 1, 2].map(() => new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', () => {});
  })));
  await sleep(200);
  const over = await rawExchange(port, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.equal(over.responses[0]?.status, 503, `the 4th connection: ${over.raw.toString().slice(0, 200)}`);
  assert.match(JSON.parse(over.responses[0].text).error.message, /--max-connections/);
  assert.equal(over.reset, null);
  idle.pop().destroy();
  await sleep(200);
  const again = await rawExchange(port, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.equal(again.responses[0]?.status, 200, 'a connection below the limit again is served');
  for (const s of idle) s.destroy();
  await sleep(1500);  // every connection so far closed (--idle-timeout 1 closes the /health poller's)
  t.check();

  // One byte a second: cut by the read timeout with 408, and the engine never sees a request.
  const started = Date.now();
  const bytes = [...'POST /v1/completions HTTP/1.1\r\nHost: x\r\n'].flatMap((c) => [c, 1000]);
  const slow = rawExchange(port, bytes, { timeoutMs: 15000 });
  await sleep(1000);
  assert.equal(await metric(base, 'parley:num_requests_waiting') + await metric(base, 'parley:num_requests_running'), 0);
  const cut = await slow;
  const took = (Date.now() - started) / 1000;
  assert.equal(cut.responses[0]?.status, 408, `a trickling client: ${cut.raw.toString().slice(0, 200)}`);
  assert.ok(took >= READ_TIMEOUT_S && took < READ_TIMEOUT_S + 3, `cut after ${took} s (--read-timeout ${READ_TIMEOUT_S})`);
  t.check();

  await sleep(1500);  // the connections of the metric reads closed (--idle-timeout 1): room under the limit of 3
  // Two requests run on one websocket; the third gets 429 and the two still finish; then there is room again.
  const r = await wsSession(port, async (ws, messages) => {
    ws.send(wsRequest('a', { max_tokens: 200, ignore_eos: true, stream: true }));
    ws.send(wsRequest('b', { max_tokens: 200, ignore_eos: true, stream: true }));
    ws.send(wsRequest('c', { max_tokens: 4 }));
    while (!finalOf(messages, 'a') || !finalOf(messages, 'b')) await sleep(10);
    ws.send(wsRequest('d', { max_tokens: 4 }));
    while (!finalOf(messages, 'd')) await sleep(10);
    ws.close();
  });
  const c = r.messages.find((m) => m.id === 'c');
  assert.equal(c.type, 'error');
  assert.equal(c.status, 429, JSON.stringify(c));
  assert.match(c.error.message, /--max-ws-requests 2/);
  for (const id of ['a', 'b']) assert.equal(finalOf(r.messages, id).choices[0].finish_reason, 'length');
  assert.equal(finalOf(r.messages, 'd').choices[0].finish_reason, 'length');
  await assertNoLeaks(base, { label: 'limits' });
  t.check();
  t.note('limits 503 / 408 / 429');
}

main('http_connections', async (parley, t) => {
  const { base, port } = await t.start(['--max-body-bytes', String(MAX_BODY), '--read-timeout', String(READ_TIMEOUT_S)]);
  await keepAlive(t, port);
  await pipelining(t, base, port);
  await malformed(t, base, port);
  await websocket(t, base, port);
  await limits(t);
  await assertNoLeaks(base, { label: 'end' });
  const open = metricValue(parseMetrics(await (await fetch(`${base}/metrics`)).text()), 'parley:http_connections_open',
                           { model_name: undefined });
  assert.ok(open <= 2, `connections still open at the end: ${open}`);
  t.check();
});
