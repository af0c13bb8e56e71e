// Shared helpers for the end-to-end tests: start `parley serve` on a free port, read /metrics, stream SSE,
// and check the no-leak invariant (when no request is live, every KV block is free).
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { prng } from '../../bench/serve/prng.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, '..', '..');
// The tiny real model lives beside the repository (tests read it from ../shared).
export const MODELS_DIR = process.env.PARLEY_MODELS_DIR ?? path.resolve(REPO_ROOT, '..', 'shared', 'models');
export const MODEL_PATH = path.join(MODELS_DIR, 'stories260K.bin');
export const TOKENIZER_PATH = path.join(MODELS_DIR, 'tok512.bin');
export const MODEL_NAME = 'stories260K';
export const VOCAB = 512;
export const CONTEXT = 512;

const live = new Set();  // servers to kill when the process ends, however it ends

function killAll() {
  for (const s of live) {
    try { s.proc.kill('SIGKILL'); } catch { /* already gone */ }
  }
  live.clear();
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => { killAll(); process.exit(130); });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Keeps the last `limit` characters of a stream, for failure messages.
class Tail {
  constructor(limit = 64 * 1024) { this.limit = limit; this.text = ''; }
  push(chunk) {
    this.text += chunk;
    if (this.text.length > 2 * this.limit) this.text = this.text.slice(-this.limit);
  }
  get() { return this.text.slice(-this.limit); }
}

/**
 * Starts `parley serve` with the stories260K model on a free port (--port 0) and waits for it to answer
 * /health 200. Returns {base, port, proc, logs(), alive(), assertAlive(), stop()}.
 * The port comes from the log line "serving <model> on http://127.0.0.1:PORT ...", which spdlog prints at
 * info level (on stdout or stderr: both are read).
 */
export async function startServer(parley, flags = [], { timeoutMs = 60000, label = 'server', model = null } = {}) {
  assert.ok(parley, 'usage: node <test>.mjs <path-to-parley>');
  assert.ok(fs.existsSync(parley), `parley binary not found: ${parley}`);
  // model: another GGUF to serve (with its own vocabulary) instead of stories260K.
  const files = model ? [model] : [MODEL_PATH, TOKENIZER_PATH];
  for (const f of files) assert.ok(fs.existsSync(f), `model file not found: ${f}`);
  const modelArgs = model ? ['--model', model] : ['--model', MODEL_PATH, '--tokenizer', TOKENIZER_PATH];
  // PARLEY_E2E_FLAGS: extra `parley serve` flags for every server (e.g. "--threads 1 --isa generic").
  const common = (process.env.PARLEY_E2E_FLAGS ?? '').split(/\s+/).filter(Boolean);
  const args = ['serve', ...modelArgs, '--port', '0', '--log-level', 'info', ...common, ...flags];
  const proc = spawn(parley, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const tail = new Tail();
  let exited = null;
  const server = {
    proc, label, args,
    logs: () => tail.get(),
    alive: () => exited === null,
  };
  live.add(server);

  const port = await new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => {
      reject(new Error(`${label}: no "serving ... on http://127.0.0.1:PORT" line within ${timeoutMs} ms\n` +
                       `command: ${parley} ${args.join(' ')}\n--- server log ---\n${tail.get()}`));
    }, timeoutMs);
    const onData = (chunk) => {
      const s = chunk.toString('utf8');
      tail.push(s);
      if (seen !== null) {
        seen += s;
        const m = seen.match(/http:\/\/127\.0\.0\.1:(\d+)/);
        if (m) {
          seen = null;
          clearTimeout(timer);
          resolve(Number(m[1]));
        } else if (seen.length > 1 << 20) seen = seen.slice(-4096);
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('error', (e) => { clearTimeout(timer); reject(new Error(`${label}: cannot start ${parley}: ${e.message}`)); });
    proc.on('exit', (code, signal) => {
      exited = { code, signal };
      live.delete(server);
      clearTimeout(timer);
      reject(new Error(`${label}: exited (code ${code}, signal ${signal}) before serving\n` +
                       `command: ${parley} ${args.join(' ')}\n--- server log ---\n${tail.get()}`));
    });
  });
  server.port = port;
  server.base = `http://127.0.0.1:${port}`;

  server.assertAlive = () => {
    if (exited !== null) {
      throw new Error(`${label} died (code ${exited.code}, signal ${exited.signal})\n--- server log ---\n${tail.get()}`);
    }
  };
  server.stop = async () => {
    server.stopped = true;
    if (exited !== null) return exited;
    proc.kill('SIGTERM');
    const deadline = Date.now() + 10000;
    while (exited === null && Date.now() < deadline) await sleep(50);
    if (exited === null) {
      proc.kill('SIGKILL');
      while (exited === null) await sleep(20);
      live.delete(server);
      throw new Error(`${label}: did not stop within 10 s of SIGTERM (killed)\n--- server log ---\n${tail.get()}`);
    }
    return exited;
  };

  // The port is bound before the line is printed; /health confirms the router answers.
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    server.assertAlive();
    try {
      const r = await fetch(`${server.base}/health`);
      await r.arrayBuffer();
      if (r.status === 200) break;
    } catch { /* not yet */ }
    if (Date.now() > deadline) throw new Error(`${label}: /health never answered 200\n--- server log ---\n${tail.get()}`);
    await sleep(50);
  }
  return server;
}

// ---------- HTTP helpers ----------

export function authHeaders(apiKey) {
  return apiKey ? { Authorization: `Bearer ${apiKey}` } : {};
}

/** POST a JSON body (object, or a raw string sent as is). Returns {status, headers, text, json}. */
export async function post(base, route, body, { headers = {}, signal } = {}) {
  const r = await fetch(base + route, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
  const text = await r.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: r.status, headers: r.headers, text, json };
}

export async function get(base, route, { headers = {} } = {}) {
  const r = await fetch(base + route, { headers });
  const text = await r.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: r.status, headers: r.headers, text, json };
}

/** A non-streamed completion that must succeed; returns the response JSON. */
export async function complete(base, body, opts = {}) {
  const r = await post(base, '/v1/completions', { model: MODEL_NAME, ...body }, opts);
  assert.equal(r.status, 200, `POST /v1/completions ${JSON.stringify(body).slice(0, 300)} -> ${r.status} ${r.text.slice(0, 500)}`);
  return r.json;
}

/** Token ids of a text (POST /tokenize). */
export async function tokenize(base, text, opts = {}) {
  const r = await post(base, '/tokenize', { model: MODEL_NAME, prompt: text }, opts);
  assert.equal(r.status, 200, `/tokenize -> ${r.status} ${r.text}`);
  return r.json.tokens;
}

/**
 * Parses an SSE body into its `data:` payloads. Returns an async iterator of strings (without "data: ").
 * Used with fetch's ReadableStream body.
 */
export async function* sseEvents(body) {
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of body) {
    buf += decoder.decode(chunk, { stream: true });
    let i;
    while ((i = buf.search(/\r?\n\r?\n/)) >= 0) {
      const raw = buf.slice(0, i);
      buf = buf.slice(i + (buf[i] === '\r' ? 4 : 2));
      const data = raw.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
      if (data) yield data;
    }
  }
  if (buf.trim()) {
    const data = buf.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
    if (data) yield data;
  }
}

/**
 * A streamed completion or chat completion over raw fetch. Returns
 * {status, chunks: [json], texts: {index: text}, text (choice 0), finishReasons, usage, done, errors, times}
 * where times[i] is the arrival time (ms, performance.now()) of the i-th content chunk.
 * `onChunk(json, count)` may return 'abort' to stop reading (the caller aborts via `controller`).
 */
export async function stream(base, route, body, { headers = {}, signal, onChunk } = {}) {
  const r = await fetch(base + route, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ model: MODEL_NAME, ...body, stream: true }),
    signal,
  });
  const out = { status: r.status, chunks: [], texts: {}, text: '', finishReasons: {}, usage: null, done: false, errors: [], times: [] };
  if (r.status !== 200) {
    out.body = await r.text();
    return out;
  }
  assert.match(r.headers.get('content-type') ?? '', /text\/event-stream/, 'streamed response must be text/event-stream');
  for await (const data of sseEvents(r.body)) {
    if (data === '[DONE]') { out.done = true; continue; }
    assert.ok(!out.done, `data after [DONE]: ${data}`);
    const j = JSON.parse(data);
    if (j.error) { out.errors.push(j.error); continue; }
    out.chunks.push(j);
    if (j.usage) out.usage = j.usage;
    for (const c of j.choices ?? []) {
      const t = c.text ?? c.delta?.content ?? '';
      out.texts[c.index] = (out.texts[c.index] ?? '') + t;
      if (t) out.times.push(performance.now());
      if (c.finish_reason) out.finishReasons[c.index] = c.finish_reason;
    }
    if (onChunk && onChunk(j, out.chunks.length) === 'abort') break;
  }
  out.text = out.texts[0] ?? '';
  return out;
}

// ---------- metrics ----------

function unescapeLabel(v) {
  return v.replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
}

/** Parses Prometheus text exposition into [{name, labels, value}]. */
export function parseMetrics(text) {
  const samples = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?\s*$/);
    if (!m) throw new Error(`unparseable metrics line: ${line}`);
    const labels = {};
    if (m[3]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/g;
      let lm;
      while ((lm = re.exec(m[3])) !== null) labels[lm[1]] = unescapeLabel(lm[2]);
    }
    const v = m[4];
    const value = v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : v === 'NaN' ? NaN : Number(v);
    samples.push({ name: m[1], labels, value });
  }
  return samples;
}

export async function readMetrics(base) {
  let r, text;
  try {
    r = await fetch(`${base}/metrics`);
    text = await r.text();
  } catch (e) {
    throw new Error(`GET ${base}/metrics failed: ${e.message}${e.cause ? ` (${e.cause.code ?? ''} ${e.cause.message ?? e.cause})` : ''}`);
  }
  assert.equal(r.status, 200, `/metrics -> ${r.status} ${text.slice(0, 300)}`);
  return parseMetrics(text);
}

/**
 * The value of the one sample named `name` whose labels include `labels` (default: model_name is the served
 * model). Throws if none or several match, unless {optional: true} (then undefined for none).
 */
export function metricValue(samples, name, labels = {}, { optional = false } = {}) {
  const want = { model_name: MODEL_NAME, ...labels };
  const hits = samples.filter((s) => s.name === name && Object.entries(want).every(([k, v]) => s.labels[k] === v));
  if (hits.length === 0) {
    if (optional) return undefined;
    const same = samples.filter((s) => s.name === name).map((s) => JSON.stringify(s.labels));
    throw new Error(`metric ${name}${JSON.stringify(want)} not found` + (same.length ? `; present: ${same.join(' ')}` : ''));
  }
  if (hits.length > 1) throw new Error(`metric ${name}${JSON.stringify(want)} matches ${hits.length} series`);
  return hits[0].value;
}

export async function metric(base, name, labels = {}) {
  return metricValue(await readMetrics(base), name, labels);
}

/**
 * Polls /metrics up to `timeoutMs` until nothing is running or waiting and the KV cache is empty
 * (kv_cache_usage_perc == 0: every block free or cached with refcount 0). Returns the last samples.
 * `model`: the served model's name, when it is not stories260K.
 */
export async function assertNoLeaks(base, { timeoutMs = 5000, label = '', model = MODEL_NAME } = {}) {
  const deadline = Date.now() + timeoutMs;
  const labels = { model_name: model };  // another served model than stories260K
  let last;
  for (;;) {
    const s = await readMetrics(base);
    last = {
      running: metricValue(s, 'parley:num_requests_running', labels),
      waiting: metricValue(s, 'parley:num_requests_waiting', labels),
      kv: metricValue(s, 'parley:kv_cache_usage_perc', labels),
    };
    if (last.running === 0 && last.waiting === 0 && last.kv === 0) return s;
    if (Date.now() > deadline) {
      assert.fail(`leak check${label ? ` (${label})` : ''} failed after ${timeoutMs} ms: ` +
                  `num_requests_running=${last.running} num_requests_waiting=${last.waiting} kv_cache_usage_perc=${last.kv}`);
    }
    await sleep(100);
  }
}

/** Waits until the engine is idle (running == waiting == 0), then returns fresh samples. */
export async function settle(base, timeoutMs = 5000) {
  return assertNoLeaks(base, { timeoutMs, label: 'settle' });
}

// ---------- misc ----------

export { prng };

/** `n` token ids in [lo, hi) from a seeded PRNG (ids below 3 are <unk>, BOS, EOS). */
export function randomTokenIds(n, seed, { lo = 3, hi = VOCAB } = {}) {
  const r = prng(seed);
  return Array.from({ length: n }, () => lo + Math.floor(r() * (hi - lo)));
}

/** Asserts an OpenAI-shaped error body: {error: {message, type, param, code}}, code a string or null. */
export function assertErrorShape(r, status, what) {
  assert.equal(r.status, status, `${what}: expected ${status}, got ${r.status}: ${r.text.slice(0, 500)}`);
  assert.ok(r.json && typeof r.json === 'object', `${what}: error body is not JSON: ${r.text.slice(0, 300)}`);
  const e = r.json.error;
  assert.ok(e && typeof e === 'object', `${what}: no "error" object in ${r.text.slice(0, 300)}`);
  for (const k of ['message', 'type', 'param', 'code']) assert.ok(k in e, `${what}: error lacks "${k}": ${r.text.slice(0, 300)}`);
  assert.equal(typeof e.message, 'string', `${what}: error.message must be a string`);
  assert.ok(e.message.length > 3, `${what}: error.message is empty: ${r.text}`);
  assert.equal(typeof e.type, 'string', `${what}: error.type must be a string`);
  assert.ok(e.code === null || typeof e.code === 'string', `${what}: error.code must be a string or null (OpenAI's ` +
            `specification; the status is HTTP's): ${JSON.stringify(e.code)}`);
  return e;
}

/**
 * Runs a test body `fn(parley, ctx)` as a standalone script: argv[2] (or $PARLEY) is the parley binary.
 * ctx.start(flags, {label}) starts a server that is stopped with SIGTERM at the end (and must exit 0);
 * ctx.check() counts a passed check, ctx.note(s) adds to the summary. Prints one line, PASS or FAIL (with
 * the error and every server's log tail), and exits 0 or 1. PARLEY_E2E_TIMEOUT_MS bounds the run (120 s).
 */
export function main(name, fn) {
  const parley = process.argv[2] ?? process.env.PARLEY;
  const started = performance.now();
  const checks = { count: 0, notes: [] };
  const ctx = {
    check: () => { checks.count += 1; },
    note: (s) => checks.notes.push(s),
    servers: [],
    async start(flags, opts) {
      const s = await startServer(parley, flags, opts);
      ctx.servers.push(s);
      return s;
    },
  };
  const budgetMs = Number(process.env.PARLEY_E2E_TIMEOUT_MS ?? 120000);
  const watchdog = setTimeout(() => {
    console.error(`FAIL ${name}: timed out after ${budgetMs} ms`);
    for (const s of ctx.servers) console.error(`--- ${s.label} log tail ---\n${s.logs().slice(-4000)}`);
    killAll();
    process.exit(1);
  }, budgetMs);
  // The watchdog stays referenced: a test stuck on a promise that never settles fails instead of exiting 0.
  (async () => {
    if (!parley) throw new Error(`usage: node ${name}.mjs <path-to-parley>`);
    await fn(parley, ctx);
    for (const s of ctx.servers) if (!s.stopped) s.assertAlive();
    // Graceful shutdown on SIGTERM: exit status 0, no crash.
    for (const s of ctx.servers) {
      const { code, signal } = await s.stop();
      if (code !== 0) {
        throw new Error(`${s.label}: unclean exit after SIGTERM (code ${code}, signal ${signal}); all checks before it passed\n` +
                        `--- server log ---\n${s.logs().slice(-2000)}`);
      }
    }
  })().then(
    () => {
      const secs = ((performance.now() - started) / 1000).toFixed(1);
      console.log(`PASS ${name} (${checks.count} checks, ${secs} s)${checks.notes.length ? ': ' + checks.notes.join('; ') : ''}`);
      killAll();
      process.exit(0);
    },
    (err) => {
      const secs = ((performance.now() - started) / 1000).toFixed(1);
      console.error(`FAIL ${name} after ${secs} s: ${err?.stack ?? err}`);
      for (const s of ctx.servers) {
        const state = s.alive() ? 'alive' : 'DEAD';
        console.error(`--- ${s.label} (${state}) log tail ---\n${s.logs().slice(-4000)}`);
      }
      killAll();
      process.exit(1);
    },
  );
}
