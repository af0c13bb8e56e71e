// Clients that stop reading their output: a websocket with 256 requests (ids of 256 bytes, which every delta
// repeats) and an SSE stream of 256 prompts, each asking for far more than the kernel's buffers hold on loopback
// (about 4 MB), while reading nothing. Against --max-output-backlog-bytes the server sheds them once their unread
// output passes the bound (the websocket then closes with 1008 when the client reads again); against
// --write-timeout it cuts them that long after a write stops moving. Either way their requests are aborted (the
// rest finished), parley:http_connections_cut_total{reason} counts the cut, the server's resident memory stays
// bounded and nothing is leaked. The same clients reading as they go are never cut, however far the server outruns
// them within the bound.
//   node tests/e2e/slow_readers.mjs <path-to-parley>
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import WebSocket from 'ws';
import { main, MODEL_NAME, readMetrics, metricValue, assertNoLeaks, complete, sleep } from './lib.mjs';

// The kernel's ~4 MB fill at a sanitized engine's speed: more than lib.mjs's default 120 s may be needed (ctest: 180).
if (!process.env.PARLEY_E2E_TIMEOUT_MS) process.env.PARLEY_E2E_TIMEOUT_MS = '170000';

const BACKLOG = 2 << 20;  // above a reading wave's output (below); stalled output passes it within seconds
const WRITE_TIMEOUT_S = 2;
const WS_REQUESTS = 256;
const SSE_CHOICES = 256;  // prompts (n = 1)
const MAX_TOKENS = 400;
const READ_WAVES = 6;
const WAVE_TOKENS = 16;  // a reading wave: ~1.4 MB of websocket output, under BACKLOG
const COMMON = ['--max-ws-requests', String(WS_REQUESTS)];
// Resident memory may grow by the KV cache's pages touched for the first time, never by the unread output.
const RSS_LIMIT_MIB = 96;
const CUT_LIMIT_S = 60;  // the kernel's buffers fill first: at this engine's speed, seconds; slower under the sanitizers
const ID = (i) => `${i}`.padStart(256, 'r');  // the longest id taken
// The websocket's request message `i` (the seed) under id `id`.
const WS_REQUEST = (id, i, maxTokens = MAX_TOKENS) => JSON.stringify({
  type: 'request', id: ID(id), endpoint: 'completions',
  body: { model: MODEL_NAME, prompt: 'Once upon a time', max_tokens: maxTokens, ignore_eos: true, temperature: 0.8, seed: i } });
// The raw HTTP request of a streamed completion of SSE_CHOICES prompts.
function ssePost(maxTokens = MAX_TOKENS) {
  const payload = JSON.stringify({ model: MODEL_NAME, prompt: Array.from({ length: SSE_CHOICES }, (_, i) => `Story ${i}:`),
                                   max_tokens: maxTokens, ignore_eos: true, temperature: 0.8, seed: 5, stream: true });
  return `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
         `Content-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`;
}

const rssKiB = (pid) => Number(fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);

// The server's resident memory sampled every 20 ms until stopped; returns the peak.
function watchRss(pid) {
  let peak = rssKiB(pid);
  const timer = setInterval(() => { peak = Math.max(peak, rssKiB(pid)); }, 20);
  return () => { clearInterval(timer); return Math.max(peak, rssKiB(pid)); };
}

async function counters(base) {
  const s = await readMetrics(base);
  const own = (name, labels) => metricValue(s, name, { model_name: undefined, ...labels });
  return {
    write_timeout: own('parley:http_connections_cut_total', { reason: 'write_timeout' }),
    output_backlog: own('parley:http_connections_cut_total', { reason: 'output_backlog' }),
    abort: metricValue(s, 'parley:request_success_total', { finished_reason: 'abort' }),
    length: metricValue(s, 'parley:request_success_total', { finished_reason: 'length' }),
    open: own('parley:http_connections_open', {}),
  };
}

// The bytes the kernel holds for the connection of the client on `clientPort`: the server socket's send queue
// and the client socket's receive queue (/proc/net/tcp). While they grow, the server's writes are moving.
function kernelBytes(clientPort) {
  const port = clientPort.toString(16).toUpperCase().padStart(4, '0');
  let total = 0;
  for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length > 4 && (f[1].endsWith(`:${port}`) || f[2].endsWith(`:${port}`)))
      total += f[4].split(':').reduce((sum, h) => sum + parseInt(h, 16), 0);
  }
  return total;
}

// Samples kernelBytes every 20 ms until stopped; returns when they last grew by a write's worth (the cut's FIN
// adds one byte) and their peak.
function watchKernel(clientPort) {
  let peak = 0;
  let grewAt = performance.now();
  const timer = setInterval(() => {
    const bytes = kernelBytes(clientPort);
    if (bytes > peak + 64) grewAt = performance.now();
    peak = Math.max(peak, bytes);
  }, 20);
  return () => { clearInterval(timer); return { grewAt, peak }; };
}

// Polls until the cut counter for `reason` has grown by one; returns when it was seen (performance.now()).
async function waitForCut(base, before, reason, limitS) {
  const started = performance.now();
  for (;;) {
    const c = await counters(base);
    if (c[reason] > before[reason]) {
      assert.equal(c[reason], before[reason] + 1, `one connection cut for ${reason}`);
      return performance.now();
    }
    assert.ok(performance.now() - started < limitS * 1000, `no cut for ${reason} within ${limitS} s: ${JSON.stringify(c)}`);
    await sleep(50);
  }
}

function openWs(port) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/ws`);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

// A websocket that sends its requests and reads nothing (its socket paused) until `resume()`.
async function wsStalled(port) {
  const ws = await openWs(port);
  ws.pause();
  for (let i = 0; i < WS_REQUESTS; i++) ws.send(WS_REQUEST(i, i));
  const closed = new Promise((resolve) => {
    ws.on('close', (code) => resolve({ code }));
    ws.on('error', (e) => resolve({ error: e.code ?? e.message }));
  });
  return { port: ws._socket.localPort, resume: () => { ws.resume(); return closed; } };
}

// A streamed completion on a raw socket that reads nothing until `resume()`.
async function sseStalled(port) {
  const sock = net.connect(port, '127.0.0.1');
  sock.pause();
  await new Promise((resolve) => sock.once('connect', resolve));
  sock.write(ssePost());
  let bytes = 0;
  sock.on('data', (d) => { bytes += d.length; });
  const closed = new Promise((resolve) => {
    sock.on('error', (e) => resolve({ error: e.code, bytes }));
    sock.on('close', () => resolve({ closed: true, bytes }));
  });
  return { port: sock.localPort, resume: () => { sock.resume(); return closed; } };
}

// A websocket that reads as it goes: `wave(w)` sends WS_REQUESTS requests and resolves with the bytes read once
// every one has its final message; an error message or a close rejects it.
async function wsReader(port) {
  const ws = await openWs(port);
  let current = null;
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString());
    if (!current) return;
    current.bytes += d.length;
    if (m.type === 'error') current.reject(new Error(`reading websocket: ${d}`));
    if (m.type === 'final' && ++current.finals === WS_REQUESTS) current.resolve(current.bytes);
  });
  ws.on('close', (code) => current?.reject(new Error(`the reading websocket was closed (${code}) after ${current.finals} finals`)));
  const wave = (w) => new Promise((resolve, reject) => {
    current = { finals: 0, bytes: 0, resolve, reject };
    for (let i = 0; i < WS_REQUESTS; i++) ws.send(WS_REQUEST(`${w}.${i}`, i, WAVE_TOKENS));
  });
  return { wave, close: () => ws.close() };
}

// A streamed completion per wave on one kept-alive raw socket that reads as it goes: `wave()` resolves with the
// response (its chunked body's end read) and its length.
function sseReader(port) {
  const sock = net.connect(port, '127.0.0.1');
  sock.setEncoding('utf8');
  let current = null;
  let text = '';
  sock.on('data', (d) => {
    text += d;
    if (current && text.endsWith('\r\n0\r\n\r\n')) current.resolve(text);
  });
  sock.on('close', () => current?.reject(new Error('the reading SSE connection was closed')));
  const request = ssePost(WAVE_TOKENS);
  const wave = () => new Promise((resolve, reject) => {
    current = { resolve, reject };
    text = '';
    sock.write(request);
  });
  return { wave, close: () => sock.end() };
}

// The same clients reading as they go, over one connection each, in waves: a wave's output stays under the bound,
// so however far the server outruns a reader (on two cores the engine outruns Node's parsing) it is never cut,
// while all waves' output is well over it, so a bound that counted bytes sent instead of unread would cut them.
async function readingClients(t, server) {
  const before = await counters(server.base);
  const ws = await wsReader(server.port);
  const sse = sseReader(server.port);
  let most = 0;
  const totals = { ws: 0, sse: 0 };
  for (let w = 0; w < READ_WAVES; w++) {
    const [wsBytes, response] = await Promise.all([ws.wave(w), sse.wave()]);
    assert.match(response, /^HTTP\/1\.1 200 /, `SSE wave ${w}: the status line`);
    assert.ok(response.includes('data: [DONE]'), `SSE wave ${w}: the stream ended with [DONE]`);
    const finished = response.match(/"finish_reason":\s*"length"/g)?.length ?? 0;
    assert.equal(finished, SSE_CHOICES, `SSE wave ${w}: every choice finished whole`);
    most = Math.max(most, wsBytes, Buffer.byteLength(response));
    totals.ws += wsBytes;
    totals.sse += Buffer.byteLength(response);
  }
  ws.close();
  sse.close();
  assert.ok(most < BACKLOG && Math.min(totals.ws, totals.sse) > 2 * BACKLOG,
            `a wave's output (at most ${most} bytes) fits the bound, each connection's (${JSON.stringify(totals)}) does not`);
  const after = await counters(server.base);
  assert.deepEqual([after.write_timeout, after.output_backlog], [before.write_timeout, before.output_backlog], 'no reader cut');
  assert.equal(after.length - before.length, READ_WAVES * (WS_REQUESTS + SSE_CHOICES), 'every request of the readers finished whole');
  t.note(`readers: ${READ_WAVES} waves of at most ${(most / 1e6).toFixed(2)} MB, ${(totals.ws / 1e6).toFixed(1)} MB on the ` +
         `websocket and ${(totals.sse / 1e6).toFixed(1)} MB on the SSE connection, none cut`);
}

// One stalled client against `server`: it is cut for `reason`, its requests end (aborted, or finished before the
// cut) with nothing left running, resident memory stays bounded, and the client sees the end once it reads again.
async function stalledClient(t, server, what, start, reason, requests) {
  const before = await counters(server.base);
  const rssBefore = rssKiB(server.proc.pid);
  const stopRss = watchRss(server.proc.pid);
  const started = performance.now();
  const client = await start();
  const stopKernel = watchKernel(client.port);
  const cutAt = await waitForCut(server.base, before, reason, CUT_LIMIT_S);
  const kernel = stopKernel();
  const took = (cutAt - started) / 1000;
  const stalledFor = (cutAt - kernel.grewAt) / 1000;  // since the server's writes stopped moving
  await assertNoLeaks(server.base, { label: `${what}: after the cut` });
  const peak = stopRss();
  const after = await counters(server.base);
  const aborted = after.abort - before.abort;
  assert.ok(aborted >= 1, `${what}: no request aborted by the cut (${JSON.stringify(after)})`);
  assert.equal(aborted + after.length - before.length, requests, `${what}: every request ended, aborted or whole`);
  const ending = await Promise.race([client.resume(), sleep(5000).then(() => null)]);
  assert.ok(ending, `${what}: the client saw no end of the connection within 5 s of reading again`);
  // The server holds the connection no more (the metric reads' own connection is open both times).
  for (let i = 0; (await counters(server.base)).open > before.open; i++) {
    assert.ok(i < 40, `${what}: the connection is still open on the server`);
    await sleep(50);
  }
  const grewMiB = (peak - rssBefore) / 1024;
  // Under ASan freed memory waits in its quarantine, so resident memory says nothing there.
  if (!process.env.PARLEY_SANITIZED) assert.ok(grewMiB < RSS_LIMIT_MIB, `${what}: resident memory grew ${grewMiB.toFixed(1)} MiB`);
  t.note(`${what}: cut (${reason}) after ${took.toFixed(1)} s, ${stalledFor.toFixed(1)} s after the writes stopped ` +
         `(${(kernel.peak / 1e6).toFixed(1)} MB in the kernel), ${aborted}/${requests} aborted, RSS +${grewMiB.toFixed(1)} MiB, ` +
         `client saw ${JSON.stringify(ending)}`);
  return { ending, stalledFor };
}

main('slow_readers', async (parley, t) => {
  // --- Past the backlog bound (the write timeout far away): shed at once; the websocket's close says why.
  const backlog = await t.start([...COMMON, '--max-output-backlog-bytes', String(BACKLOG), '--write-timeout', '60'],
                                { label: 'backlog server' });
  await readingClients(t, backlog);
  t.check();
  const ws = await stalledClient(t, backlog, 'websocket over the backlog', () => wsStalled(backlog.port), 'output_backlog',
                                 WS_REQUESTS);
  assert.equal(ws.ending.code, 1008, `the websocket closes with 1008 once read: ${JSON.stringify(ws.ending)}`);
  t.check();
  await stalledClient(t, backlog, 'SSE over the backlog', () => sseStalled(backlog.port), 'output_backlog', SSE_CHOICES);
  t.check();

  // --- Past the write timeout (the backlog bound far away): cut that long after a write stops moving.
  const timeout = await t.start([...COMMON, '--write-timeout', String(WRITE_TIMEOUT_S), '--max-output-backlog-bytes',
                                 String(1 << 30)], { label: 'write-timeout server' });
  for (const [what, start, requests] of [['websocket past the write timeout', () => wsStalled(timeout.port), WS_REQUESTS],
                                         ['SSE past the write timeout', () => sseStalled(timeout.port), SSE_CHOICES]]) {
    const r = await stalledClient(t, timeout, what, start, 'write_timeout', requests);
    assert.ok(r.stalledFor > WRITE_TIMEOUT_S - 0.75 && r.stalledFor < WRITE_TIMEOUT_S + 2,
              `${what}: cut ${r.stalledFor.toFixed(2)} s after the writes stopped (--write-timeout ${WRITE_TIMEOUT_S})`);
    assert.ok(r.ending.code !== 1000, `${what}: a cut, not a clean close: ${JSON.stringify(r.ending)}`);
    t.check();
  }

  // Both servers still serve.
  for (const s of [backlog, timeout]) assert.ok((await complete(s.base, { prompt: 'Once', max_tokens: 8 })).choices[0].text);
  t.check();
});
