// A bounded soak on loopback: for --seconds (default $PARLEY_SOAK_SECONDS or 20), --clients (64) clients send
// valid requests (completions and chat, streamed and not, n = 2 and lists of prompts with n = 2, stop strings; the
// server runs n-gram speculation with --max-num-seqs 16, so the running batch is full and n > 1 splits there)
// mixed with bad bodies, malformed HTTP, mid-stream disconnects, websocket sessions with a cancel, slow readers
// (a stream read a chunk at a time with pauses, or not read for a second) and stalled ones (a stream never read,
// then dropped). Then: every valid request's output equals the same request sent alone afterwards, no block is
// leaked, nothing runs, resident memory grew by under 10% (from the end of the first fifth), and the log holds
// no warning or error but the expected ones. Prints the figures. `--seconds 180` is the long run.
// --pd: the clients talk to a decode instance whose prefill instance is killed (SIGKILL) and restarted on its
// port twice during the run; requests in flight then recompute locally, and the checks are the same (plus no
// block held on the last prefill instance).
//   node tests/e2e/soak.mjs <path-to-parley> [--seconds N] [--clients N] [--pd]
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import WebSocket from 'ws';
import { main, MODEL_NAME, post, stream, assertNoLeaks, assertErrorShape, prng, sleep } from './lib.mjs';

const args = process.argv.slice(3);
const argOf = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const SECONDS = argOf('--seconds', Number(process.env.PARLEY_SOAK_SECONDS ?? 20));
const PD = args.includes('--pd');
const CLIENTS = argOf('--clients', 64);
const REPLAY_MAX = 400;  // valid requests replayed alone afterwards (all of them when fewer)
if (!process.env.PARLEY_E2E_TIMEOUT_MS) process.env.PARLEY_E2E_TIMEOUT_MS = String((SECONDS * 3 + 120) * 1000);

const WORDS = ['the', 'cat', 'sat', 'on', 'a', 'mat', 'and', 'then', 'dog', 'ran', 'far', 'away', 'happy', 'girl', 'sun'];

const rssKiB = (pid) => Number(fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]);

// A valid request: its route, body, how many choices it has, and how the output is compared (choice texts in
// index order). A third of the completions carry 2-4 prompts, so one request with n = 2 asks for up to 8 rows.
function validRequest(rand, i) {
  const chat = rand() < 0.4;
  const n = rand() < 0.35 ? 2 : 1;
  const promptText = () => Array.from({ length: 2 + Math.floor(rand() * 8) }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
  const prompts = !chat && rand() < 0.33 ? 2 + Math.floor(rand() * 3) : 1;
  const body = {
    model: MODEL_NAME, max_tokens: 8 + Math.floor(rand() * 40), seed: 1000 + i, n,
    temperature: n > 1 || rand() < 0.7 ? 0.8 : 0,
  };
  if (rand() < 0.3) body.stop = [WORDS[Math.floor(rand() * WORDS.length)]];
  if (chat) body.messages = [{ role: 'user', content: promptText() }];
  else body.prompt = prompts > 1 ? Array.from({ length: prompts }, promptText) : promptText();
  return { route: chat ? '/v1/chat/completions' : '/v1/completions', body, chat, choices: prompts * n };
}

// A stream read by a slow client over node:http: a pause of `pauseMs` after each chunk, or (stallMs) one stall
// after the first chunk. Resolves with the texts per choice once [DONE] arrives.
function slowStream(port, req, { pauseMs = 0, stallMs = 0 }) {
  return new Promise((resolve, reject) => {
    const r = http.request({ host: '127.0.0.1', port, method: 'POST', path: req.route, headers: { 'Content-Type': 'application/json' } });
    r.on('error', reject);
    r.on('response', (res) => {
      if (res.statusCode !== 200) return reject(new Error(`status ${res.statusCode}`));
      let text = '';
      let chunks = 0;
      res.on('data', (d) => {
        text += d.toString();
        const pause = ++chunks === 1 ? stallMs : pauseMs;
        if (pause > 0) { res.pause(); setTimeout(() => res.resume(), pause); }
      });
      res.on('end', () => {
        const data = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
        if (data.at(-1) !== '[DONE]') return reject(new Error(`a slow reader's stream did not end with [DONE]: ${text.slice(-200)}`));
        const texts = Array.from({ length: req.choices }, () => '');
        for (const d of data.slice(0, -1)) {
          const j = JSON.parse(d);
          if (j.error) return reject(new Error(`a slow reader got an error: ${d}`));
          for (const c of j.choices ?? []) texts[c.index] += c.text ?? c.delta?.content ?? '';
        }
        resolve(texts);
      });
    });
    r.end(JSON.stringify({ ...req.body, stream: true }));
  });
}

// A stream never read, dropped after `ms`: the server sees a client gone with its output unread.
function stalledStream(port, seed, ms) {
  return new Promise((resolve) => {
    const body = JSON.stringify({ model: MODEL_NAME, prompt: 'Once', max_tokens: 300, ignore_eos: true, temperature: 0.8, seed, stream: true });
    const sock = net.connect(port, '127.0.0.1');
    sock.pause();
    sock.on('error', () => {});
    sock.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    setTimeout(() => { sock.destroy(); resolve(); }, ms);
  });
}

const textsOf = (json, chat) => json.choices.slice().sort((a, b) => a.index - b.index)
  .map((c) => (chat ? c.message.content : c.text));

const BAD_BODIES = [
  '{"model": "stories260K", "prompt": "hi", ',
  JSON.stringify({ model: MODEL_NAME, prompt: 'hi', temperature: -1 }),
  JSON.stringify({ model: MODEL_NAME, prompt: 'hi', n: 2, temperature: 0 }),
  JSON.stringify({ model: MODEL_NAME, prompt: [99999] }),
  JSON.stringify({ model: MODEL_NAME, messages: [] }),
  '[1, 2, 3]',
];

function rawGarbage(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    s.on('data', (d) => { got += d; });
    s.on('error', () => resolve('reset'));
    s.on('close', () => resolve(got.split('\r\n')[0]));
    s.on('connect', () => s.write('\x16\x03\x01 not HTTP\r\n\r\n'));
  });
}

// A websocket session: two requests, the second cancelled after its first delta. Resolves with the final
// messages by id, and `texts` (the kept request's deltas joined per choice).
function wsSession(port, req) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/ws`);
    const finals = { texts: [] };
    ws.on('error', reject);
    ws.on('message', (m) => {
      const j = JSON.parse(m.toString());
      if (j.id === 'keep' && j.type === 'delta') finals.texts[j.index] = (finals.texts[j.index] ?? '') + j.text;
      if (j.type === 'error') return reject(new Error(`websocket error: ${JSON.stringify(j)}`));
      if (j.id === 'cancel-me' && j.type === 'delta' && !finals.cancelSent) {
        finals.cancelSent = true;
        ws.send(JSON.stringify({ type: 'cancel', id: 'cancel-me' }));
      }
      if (j.type === 'final') finals[j.id] = j;
      if (finals.keep && finals['cancel-me']) ws.close();
    });
    ws.on('close', () => resolve(finals));
    ws.on('open', () => {
      ws.send(JSON.stringify({ type: 'request', id: 'keep', endpoint: req.chat ? 'chat.completions' : 'completions', body: req.body }));
      ws.send(JSON.stringify({ type: 'request', id: 'cancel-me', endpoint: 'completions',
                               body: { model: MODEL_NAME, prompt: 'Once', max_tokens: 400, ignore_eos: true, temperature: 0.8, seed: 1 } }));
    });
  });
}

const SPECULATION = ['--speculative-config', '{"method":"ngram","num_speculative_tokens":3}'];
// 64 clients against 16 rows: the batch is full whenever an n > 1 request splits.
const FULL_BATCH = ['--max-num-seqs', '16'];
const kvPortOf = (server) => Number(server.logs().match(/KV transfer actor published on port (\d+)/)[1]);

// PD: the prefill instance killed at 30% and 60% of the run and restarted on its port a second later.
function prefillKiller(t, first) {
  let prefill = first;
  const port = kvPortOf(first);
  let restarts = 0;
  const cycle = async () => {
    prefill.proc.kill('SIGKILL');
    t.servers.splice(t.servers.indexOf(prefill), 1);  // killed on purpose: no clean exit to check
    await sleep(1000);
    prefill = await t.start(['--role', 'prefill', '--kv-port', String(port)], { label: `prefill (restart ${++restarts})` });
  };
  const done = (async () => {
    await sleep(SECONDS * 300);
    await cycle();
    await sleep(SECONDS * 300);
    await cycle();
  })();
  return { done, current: () => prefill, restarts: () => restarts };
}

main(PD ? 'soak_pd' : 'soak', async (parley, t) => {
  let killer = null;
  let server;
  if (PD) {
    const prefill = await t.start(['--role', 'prefill', '--kv-port', '0'], { label: 'prefill' });
    server = await t.start([...SPECULATION, ...FULL_BATCH, '--max-body-bytes', '65536', '--role', 'decode', '--prefill-peers',
                            `127.0.0.1:${kvPortOf(prefill)}`], { label: 'decode' });
    killer = prefillKiller(t, prefill);
  } else {
    server = await t.start([...SPECULATION, ...FULL_BATCH, '--max-body-bytes', '65536']);
  }
  const { base, port } = server;
  // Every log line is screened as it comes (the server keeps only a tail).
  const expected = [/client disconnected/, /refused a request with 400/,
                    ...(PD ? [/prefill instance .* went down/, /KV arrived after its transfer was given up/,
                              /KV transfer failed \(.*\); prefilling it here/,
                              /the KV port .* accepts prompts and KV from any peer/] : [])];
  const badLog = [];
  let partial = '';
  const screen = (chunk) => {
    const lines = (partial + chunk.toString()).split('\n');
    partial = lines.pop();
    for (const l of lines) if (/ (warning|warn|error|critical) /.test(l) && !expected.some((re) => re.test(l))) badLog.push(l);
  };
  server.proc.stdout.on('data', screen);
  server.proc.stderr.on('data', screen);
  const counts = { valid: 0, streamed: 0, ws: 0, slow_readers: 0, stalled: 0, bad_body: 0, malformed_http: 0, disconnects: 0 };
  const unexpected = [];
  const recorded = [];  // {req, texts}
  const stopAt = Date.now() + SECONDS * 1000;
  let rssWarm = null;
  const warmTimer = setTimeout(() => { rssWarm = rssKiB(server.proc.pid); }, SECONDS * 200);

  let next = 0;
  const client = async (c) => {
    const rand = prng(7000 + c);
    while (Date.now() < stopAt) {
      const i = next++;
      const req = validRequest(rand, i);
      const roll = rand();
      try {
        if (roll < 0.35) {
          const r = await post(base, req.route, req.body);
          assert.equal(r.status, 200, r.text.slice(0, 200));
          recorded.push({ req, texts: textsOf(r.json, req.chat) });
          counts.valid += 1;
        } else if (roll < 0.6) {
          const s = await stream(base, req.route, req.body);
          assert.equal(s.status, 200, s.body);
          assert.ok(s.done && s.errors.length === 0, 'a whole stream');
          recorded.push({ req, texts: Array.from({ length: req.choices }, (_, k) => s.texts[k] ?? '') });
          counts.streamed += 1;
        } else if (roll < 0.67) {
          const finals = await wsSession(port, req);
          assert.equal(finals.keep.choices.length, req.choices);
          recorded.push({ req, texts: Array.from({ length: req.choices }, (_, k) => finals.texts[k] ?? '') });
          assert.equal(finals['cancel-me'].choices[0].finish_reason, 'abort');
          counts.ws += 1;
        } else if (roll < 0.72) {
          const slow = rand() < 0.5 ? { pauseMs: 20 + Math.floor(rand() * 40) } : { stallMs: 1000 };
          recorded.push({ req, texts: await slowStream(port, req, slow) });
          counts.slow_readers += 1;
        } else if (roll < 0.74) {
          await stalledStream(port, i, 300 + Math.floor(rand() * 700));
          counts.stalled += 1;
        } else if (roll < 0.84) {
          const controller = new AbortController();
          await stream(base, '/v1/completions', { prompt: 'Once', max_tokens: 300, ignore_eos: true, temperature: 0.8, seed: i },
                       { signal: controller.signal, onChunk: (_, n) => (n >= 2 ? 'abort' : undefined) }).catch(() => {});
          controller.abort();
          counts.disconnects += 1;
        } else if (roll < 0.95) {
          const r = await post(base, '/v1/completions', BAD_BODIES[Math.floor(rand() * BAD_BODIES.length)]);
          assertErrorShape(r, 400, 'a bad body');
          counts.bad_body += 1;
        } else {
          const line = await rawGarbage(port);
          assert.equal(line, 'HTTP/1.1 400 Bad Request');
          counts.malformed_http += 1;
        }
      } catch (e) {
        unexpected.push(`client ${c}, request ${i}: ${e.message}`);
        if (unexpected.length > 20) throw new Error(`too many failures:\n${unexpected.join('\n')}`);
      }
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
  clearTimeout(warmTimer);
  if (killer) {
    await killer.done;
    assert.equal(killer.restarts(), 2, 'the prefill instance was killed and restarted twice');
  }
  assert.deepEqual(unexpected, [], 'every client exchange went as expected');
  await assertNoLeaks(server.base, { timeoutMs: 10000, label: 'after the soak' });
  if (killer) await assertNoLeaks(killer.current().base, { timeoutMs: 10000, label: 'the last prefill instance' });
  const rssEnd = rssKiB(server.proc.pid);
  t.check();

  // Every valid request (or an even sample) sent again alone gives the same texts.
  const step = Math.max(1, Math.ceil(recorded.length / REPLAY_MAX));
  let replayed = 0;
  for (let k = 0; k < recorded.length; k += step) {
    const { req, texts } = recorded[k];
    const r = await post(base, req.route, req.body);
    assert.equal(r.status, 200);
    assert.deepEqual(textsOf(r.json, req.chat), texts, `request ${JSON.stringify(req.body).slice(0, 200)}: alone equals under load`);
    replayed += 1;
  }
  t.check();

  const growth = rssWarm ? (rssEnd - rssWarm) / rssWarm : 0;
  assert.ok(rssWarm !== null, 'resident memory was read after the warm-up');
  // Under ASan freed memory waits in its quarantine (256 MB), so resident memory says nothing there.
  if (!process.env.PARLEY_SANITIZED)
    assert.ok(growth < 0.10, `resident memory grew ${(growth * 100).toFixed(1)}% (${rssWarm} -> ${rssEnd} KiB)`);
  t.check();

  // The log: warnings and errors only of the kinds the soak provokes on purpose.
  assert.deepEqual(badLog.slice(0, 20), [], 'no unexpected warning or error in the log');
  t.check();

  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  console.log(`soak${PD ? ' (PD, the prefill instance killed twice)' : ''}: ${SECONDS} s, ${CLIENTS} clients, ${total} exchanges: ${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ')}; ` +
              `${replayed} replayed alone and equal; RSS ${rssWarm} -> ${rssEnd} KiB (${(growth * 100).toFixed(1)}%)`);
  t.note(`${total} exchanges in ${SECONDS} s, ${replayed} replayed equal, RSS ${(growth * 100).toFixed(1)}%`);
});
