#!/usr/bin/env node
// Serving load generator for parley (or any OpenAI-compatible server): streaming /v1/completions with
// random token-id prompts (or, with --endpoint, chat completions, Responses or Anthropic Messages with the same
// random words as a user message), at a fixed concurrency or a Poisson request rate; reports TTFT, TPOT, ITL and
// throughput, over keep-alive connections or one connection per request (or both, compared). No npm
// dependencies: node:http.
//
//   node bench/serve/load.mjs --url http://127.0.0.1:8000 --concurrency 16 --num-requests 200 \
//        --prompt-tokens 64 --output-tokens 64 [--model NAME]
//   node bench/serve/load.mjs --request-rate 8 ... --spawn build/parley [server flags...]
//
// See bench/serve/README.md.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { prng } from './prng.mjs';

const USAGE = `usage: node bench/serve/load.mjs (--url URL | --spawn PARLEY [server flags...]) [options]
  --concurrency N        clients in a closed loop (default 16 unless --request-rate is given)
  --request-rate R       Poisson arrivals at R requests/s ('inf': all at once); --concurrency then caps in-flight
  --num-requests N       requests in total (default 200)
  --prompt-tokens N      prompt length in token ids (default 64)
  --output-tokens N      max_tokens, with ignore_eos (default 64)
  --model NAME           model name (default: the first of GET /v1/models)
  --vocab N              prompt ids are drawn from [3, N) (default 512)
  --seed N               PRNG seed for prompts and arrivals (default 0)
  --temperature T        sampling temperature (default 0: greedy)
  --endpoint E           completions (default: token-id prompts, ignore_eos), chat, responses or messages (a user
                         message of --prompt-tokens random words; at temperature 0 the three give the same tokens)
  --api-key KEY          Authorization: Bearer KEY
  --warmup N             untimed requests first (default 2)
  --connections MODE     keep-alive (default: a pool of persistent connections, as the openai SDKs use),
                         per-request (a new connection per request, Connection: close), or compare (both, the
                         same requests, one table with the ratio)
  --json FILE            also write the results as JSON
  --spawn PARLEY ...     start 'PARLEY serve ...' on a free port (must be the last option; the rest of the
                         arguments are server flags; --model/--tokenizer default to ../shared/models/stories260K)`;

function parseArgs(argv) {
  const o = { endpoint: 'completions', connections: 'keep-alive', numRequests: 200, promptTokens: 64, outputTokens: 64, vocab: 512, seed: 0, temperature: 0, warmup: 2 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    const num = () => {
      const v = val();
      const n = Number(v);
      if (!Number.isFinite(n)) throw new Error(`${a}: not a number: ${v}`);
      return n;
    };
    switch (a) {
      case '--url': o.url = val().replace(/\/+$/, ''); break;
      case '--concurrency': o.concurrency = num(); break;
      case '--request-rate': { const v = val(); o.requestRate = v === 'inf' ? Infinity : Number(v); break; }
      case '--num-requests': o.numRequests = num(); break;
      case '--prompt-tokens': o.promptTokens = num(); break;
      case '--output-tokens': o.outputTokens = num(); break;
      case '--model': o.model = val(); break;
      case '--vocab': o.vocab = num(); break;
      case '--seed': o.seed = num(); break;
      case '--temperature': o.temperature = num(); break;
      case '--endpoint': {
        o.endpoint = val();
        if (!ENDPOINTS[o.endpoint]) throw new Error(`--endpoint must be one of ${Object.keys(ENDPOINTS).join(', ')}`);
        break;
      }
      case '--api-key': o.apiKey = val(); break;
      case '--warmup': o.warmup = num(); break;
      case '--connections': {
        o.connections = val();
        if (!['keep-alive', 'per-request', 'compare'].includes(o.connections))
          throw new Error(`--connections must be keep-alive, per-request or compare, not ${o.connections}`);
        break;
      }
      case '--json': o.json = val(); break;
      case '--spawn': o.spawn = val(); o.serverFlags = argv.slice(i + 1); i = argv.length; break;
      case '-h': case '--help': console.log(USAGE); process.exit(0); break;
      default: throw new Error(`unknown option ${a}`);
    }
  }
  if (!o.url === !o.spawn) throw new Error('give exactly one of --url and --spawn');
  if (o.requestRate !== undefined && !(o.requestRate > 0)) throw new Error('--request-rate must be > 0 or inf');
  if (o.concurrency === undefined && o.requestRate === undefined) o.concurrency = 16;
  if (o.concurrency !== undefined && !(o.concurrency >= 1)) throw new Error('--concurrency must be >= 1');
  if (!(o.numRequests >= 1 && o.promptTokens >= 1 && o.outputTokens >= 1)) throw new Error('counts must be >= 1');
  if (!(o.vocab > 3)) throw new Error('--vocab must be > 3');
  return o;
}


const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function spawnServer(parley, flags) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const models = path.resolve(here, '..', '..', '..', 'shared', 'models');
  const args = ['serve'];
  if (!flags.includes('--model')) args.push('--model', path.join(models, 'stories260K.bin'));
  if (!flags.includes('--model') && !flags.includes('--tokenizer')) args.push('--tokenizer', path.join(models, 'tok512.bin'));
  const port = await freePort();
  if (!flags.includes('--port')) args.push('--port', String(port));
  if (!flags.includes('--log-level')) args.push('--log-level', 'warn');
  args.push(...flags);
  const usedPort = flags.includes('--port') ? Number(flags[flags.indexOf('--port') + 1]) : port;
  const proc = spawn(parley, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (d) => { log = (log + d).slice(-8000); });
  let exited = false;
  proc.on('exit', () => { exited = true; });
  process.on('exit', () => { if (!exited) proc.kill('SIGKILL'); });
  const url = `http://127.0.0.1:${usedPort}`;
  const deadline = Date.now() + 60000;
  for (;;) {
    if (exited) throw new Error(`${parley} ${args.join(' ')} exited:\n${log}`);
    try {
      const r = await fetch(`${url}/health`);
      await r.arrayBuffer();
      if (r.ok) break;
    } catch { /* not up yet */ }
    if (Date.now() > deadline) throw new Error(`server did not come up in 60 s:\n${log}`);
    await sleep(100);
  }
  return {
    url,
    command: `${parley} ${args.join(' ')}`,
    stop: async () => {
      if (exited) return;
      proc.kill('SIGTERM');
      for (let i = 0; i < 100 && !exited; i++) await sleep(50);
      if (!exited) proc.kill('SIGKILL');
    },
  };
}

// A POST through node:http: resolves with the response (its body an async iterable of chunks).
function post(o, route, headers, body) {
  return new Promise((resolve, reject) => {
    const u = new URL(route, o.url);
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent: o.agent,
                               headers: { ...headers, 'Content-Length': Buffer.byteLength(body) } }, resolve);
    req.on('error', reject);
    req.end(body);
  });
}

// Each endpoint's streamed request and how its events read: the text delta, the output tokens, the end.
const WORDS = ['the', 'little', 'dog', 'ran', 'to', 'park', 'and', 'saw', 'a', 'big', 'red', 'ball', 'she', 'was', 'happy'];
const words = (ids) => ids.map((id) => WORDS[id % WORDS.length]).join(' ');
const ENDPOINTS = {
  completions: {
    route: '/v1/completions',
    body: (o, ids) => ({ prompt: ids, max_tokens: o.outputTokens, ignore_eos: true, stream_options: { include_usage: true } }),
    read: (j) => ({ text: j.choices?.[0]?.text, tokens: j.usage?.completion_tokens }),
  },
  chat: {
    route: '/v1/chat/completions',
    body: (o, ids) => ({ messages: [{ role: 'user', content: words(ids) }], max_tokens: o.outputTokens,
                         stream_options: { include_usage: true } }),
    read: (j) => ({ text: j.choices?.[0]?.delta?.content, tokens: j.usage?.completion_tokens }),
  },
  responses: {
    route: '/v1/responses',
    body: (o, ids) => ({ input: words(ids), max_output_tokens: o.outputTokens, store: false }),
    read: (j) => ({ text: j.type === 'response.output_text.delta' ? j.delta : undefined,
                    tokens: j.response?.usage?.output_tokens,
                    done: j.type === 'response.completed' || j.type === 'response.incomplete' }),
  },
  messages: {
    route: '/v1/messages',
    body: (o, ids) => ({ messages: [{ role: 'user', content: words(ids) }], max_tokens: o.outputTokens }),
    read: (j) => ({ text: j.delta?.type === 'text_delta' ? j.delta.text : undefined, tokens: j.usage?.output_tokens,
                    done: j.type === 'message_stop' }),
  },
};

// One streamed request; returns {ok, ttft, e2e, itls, tokens, error} in milliseconds.
async function oneRequest(o, prompt) {
  const headers = { 'Content-Type': 'application/json' };
  if (o.apiKey) headers.Authorization = `Bearer ${o.apiKey}`;
  if (!o.agent) headers.Connection = 'close';
  const endpoint = ENDPOINTS[o.endpoint];
  const body = { model: o.model, temperature: o.temperature, stream: true, ...endpoint.body(o, prompt) };
  const start = performance.now();
  const res = { ok: false, ttft: NaN, e2e: NaN, itls: [], tokens: 0, chunks: 0, error: null };
  try {
    const r = await post(o, endpoint.route, headers, JSON.stringify(body));
    if (r.statusCode !== 200) {
      let text = '';
      for await (const chunk of r) text += chunk;
      res.error = `HTTP ${r.statusCode}: ${text.slice(0, 200)}`;
      return res;
    }
    const decoder = new TextDecoder();
    let buf = '';
    let last = 0;
    let done = false;
    for await (const chunk of r) {
      buf += decoder.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const event = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const line = event.split('\n').find((l) => l.startsWith('data: '));  // after "event: <type>" if typed
        if (!line) continue;
        const data = line.slice(6);
        if (data === '[DONE]') { done = true; continue; }
        const j = JSON.parse(data);
        if (j.error) { res.error = j.error.message; continue; }
        const read = endpoint.read(j);
        if (read.tokens) res.tokens = read.tokens;
        if (read.done) done = true;
        if (read.text) {
          const now = performance.now();
          if (res.chunks === 0) res.ttft = now - start;
          else res.itls.push(now - last);
          last = now;
          res.chunks += 1;
        }
      }
    }
    res.e2e = performance.now() - start;
    if (!res.tokens) res.tokens = res.chunks;
    res.ok = done && !res.error && res.chunks > 0;
    if (!done && !res.error) res.error = 'stream ended without its end event';
  } catch (e) {
    res.error = e.message;
  }
  return res;
}

function percentile(xs, p) {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const k = (s.length - 1) * (p / 100);
  const lo = Math.floor(k);
  const hi = Math.ceil(k);
  return s[lo] + (s[hi] - s[lo]) * (k - lo);
}
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

async function run(o) {
  const rand = prng(o.seed);
  const prompts = Array.from({ length: o.numRequests }, () =>
    Array.from({ length: o.promptTokens }, () => 3 + Math.floor(rand() * (o.vocab - 3))));
  for (let i = 0; i < o.warmup; i++) {
    const w = await oneRequest(o, prompts[i % prompts.length]);
    if (!w.ok) throw new Error(`warmup request failed: ${w.error}`);
  }

  const results = new Array(o.numRequests);
  const limit = o.concurrency ?? Infinity;
  let inFlight = 0;
  let waiters = [];
  const acquire = async () => {
    while (inFlight >= limit) await new Promise((r) => waiters.push(r));
    inFlight += 1;
  };
  const release = () => {
    inFlight -= 1;
    const w = waiters;
    waiters = [];
    w.forEach((r) => r());
  };

  const t0 = performance.now();
  const tasks = [];
  if (o.requestRate === undefined) {
    // Closed loop: `concurrency` workers take the next request as soon as they finish one.
    let next = 0;
    for (let w = 0; w < Math.min(limit, o.numRequests); w++) {
      tasks.push((async () => {
        for (let i = next++; i < o.numRequests; i = next++) results[i] = await oneRequest(o, prompts[i]);
      })());
    }
  } else {
    // Open loop: Poisson arrivals (exponential gaps) at --request-rate, capped by --concurrency if given.
    const arrivals = prng(o.seed + 1);
    let at = 0;
    for (let i = 0; i < o.numRequests; i++) {
      if (Number.isFinite(o.requestRate)) {
        at += -Math.log(1 - arrivals()) / o.requestRate * 1000;
        const wait = t0 + at - performance.now();
        if (wait > 0) await sleep(wait);
      }
      await acquire();
      tasks.push(oneRequest(o, prompts[i]).then((r) => { results[i] = r; release(); }));
    }
  }
  await Promise.all(tasks);
  const duration = (performance.now() - t0) / 1000;

  const ok = results.filter((r) => r.ok);
  const failed = results.filter((r) => !r.ok);
  const outputTokens = ok.reduce((a, r) => a + r.tokens, 0);
  const ttfts = ok.map((r) => r.ttft);
  const tpots = ok.filter((r) => r.tokens > 1).map((r) => (r.e2e - r.ttft) / (r.tokens - 1));
  const itls = ok.flatMap((r) => r.itls);
  const e2es = ok.map((r) => r.e2e);
  return {
    config: {
      url: o.url, model: o.model, endpoint: o.endpoint, concurrency: o.concurrency ?? null,
      request_rate: o.requestRate === undefined ? null : (Number.isFinite(o.requestRate) ? o.requestRate : 'inf'),
      num_requests: o.numRequests, prompt_tokens: o.promptTokens, output_tokens: o.outputTokens,
      temperature: o.temperature, seed: o.seed, connections: o.agent ? 'keep-alive' : 'per-request',
    },
    completed: ok.length,
    failed: failed.length,
    first_errors: [...new Set(failed.map((r) => r.error))].slice(0, 5),
    duration_s: duration,
    request_throughput: ok.length / duration,
    output_token_throughput: outputTokens / duration,
    total_token_throughput: (outputTokens + ok.length * o.promptTokens) / duration,
    ttft_ms: { mean: mean(ttfts), p50: percentile(ttfts, 50), p99: percentile(ttfts, 99) },
    tpot_ms: { mean: mean(tpots), p50: percentile(tpots, 50), p99: percentile(tpots, 99) },
    itl_ms: { mean: mean(itls), p50: percentile(itls, 50), p99: percentile(itls, 99) },
    e2e_ms: { mean: mean(e2es), p50: percentile(e2es, 50), p99: percentile(e2es, 99) },
  };
}

function printTable(r) {
  const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const mode = r.config.request_rate !== null
    ? `request rate ${r.config.request_rate}/s${r.config.concurrency ? `, max concurrency ${r.config.concurrency}` : ''}`
    : `concurrency ${r.config.concurrency}`;
  const rows = [
    ['Model', r.config.model],
    ['Endpoint', r.config.endpoint],
    ['Load', mode],
    ['Connections', `${r.config.connections}${r.connections_opened != null ? ` (${r.connections_opened} opened)` : ''}`],
    ['Prompt / output tokens', `${r.config.prompt_tokens} / ${r.config.output_tokens}`],
    ['Successful requests', `${r.completed}`],
    ['Failed requests', `${r.failed}`],
    ['Duration (s)', f(r.duration_s)],
    ['Request throughput (req/s)', f(r.request_throughput)],
    ['Output token throughput (tok/s)', f(r.output_token_throughput, 1)],
    ['Total token throughput (tok/s)', f(r.total_token_throughput, 1)],
    ['TTFT p50 / p99 (ms)', `${f(r.ttft_ms.p50)} / ${f(r.ttft_ms.p99)}`],
    ['TPOT p50 / p99 (ms)', `${f(r.tpot_ms.p50)} / ${f(r.tpot_ms.p99)}`],
    ['ITL p50 / p99 (ms)', `${f(r.itl_ms.p50)} / ${f(r.itl_ms.p99)}`],
    ['E2E p50 / p99 (ms)', `${f(r.e2e_ms.p50)} / ${f(r.e2e_ms.p99)}`],
  ];
  const w = Math.max(...rows.map(([k]) => k.length));
  const line = '='.repeat(w + 24);
  console.log(line);
  console.log(' Serving benchmark');
  console.log(line);
  for (const [k, v] of rows) console.log(`${k.padEnd(w)}  ${v}`);
  console.log(line);
  if (r.first_errors.length) console.log(`errors: ${r.first_errors.join(' | ')}`);
}

// The server's parley:http_connections_total (null for a server without it).
async function connectionsAccepted(o) {
  try {
    const text = await (await fetch(`${o.url}/metrics`, { headers: o.apiKey ? { Authorization: `Bearer ${o.apiKey}` } : {} })).text();
    const m = text.match(/^parley:http_connections_total(?:\{[^}]*\})? (\S+)$/m);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

function printComparison(keep, fresh) {
  const f = (x, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const rows = [
    ['Request throughput (req/s)', keep.request_throughput, fresh.request_throughput],
    ['Output token throughput (tok/s)', keep.output_token_throughput, fresh.output_token_throughput],
    ['TTFT p50 (ms)', keep.ttft_ms.p50, fresh.ttft_ms.p50],
    ['E2E p50 (ms)', keep.e2e_ms.p50, fresh.e2e_ms.p50],
    ['Connections opened', keep.connections_opened, fresh.connections_opened],
  ];
  console.log('| | keep-alive | per-request | keep-alive / per-request |');
  console.log('|---|---|---|---|');
  for (const [k, a, b] of rows) console.log(`| ${k} | ${f(a)} | ${f(b)} | ${f(a / b)} |`);
}

async function mainCli() {
  let o;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`load.mjs: ${e.message}\n${USAGE}`);
    process.exit(2);
  }
  let server = null;
  if (o.spawn) {
    server = await spawnServer(o.spawn, o.serverFlags);
    o.url = server.url;
    console.log(`started: ${server.command}`);
  }
  try {
    if (!o.model) {
      const headers = o.apiKey ? { Authorization: `Bearer ${o.apiKey}` } : {};
      const r = await fetch(`${o.url}/v1/models`, { headers });
      if (!r.ok) throw new Error(`GET /v1/models: ${r.status} ${await r.text()}`);
      o.model = (await r.json()).data[0].id;
    }
    const modes = o.connections === 'compare' ? ['keep-alive', 'per-request'] : [o.connections];
    const results = [];
    for (const mode of modes) {
      o.agent = mode === 'keep-alive' ? new http.Agent({ keepAlive: true, maxSockets: Infinity }) : false;
      const before = await connectionsAccepted(o);
      const result = await run(o);
      const after = await connectionsAccepted(o);
      // The two /metrics reads open a connection each (fetch's own pool: at most one).
      result.connections_opened = before != null && after != null ? after - before - 1 : null;
      if (o.agent) o.agent.destroy();
      printTable(result);
      results.push(result);
    }
    if (results.length === 2) printComparison(results[0], results[1]);
    if (o.json) fs.writeFileSync(o.json, JSON.stringify(results.length === 1 ? results[0] : results, null, 2) + '\n');
    if (results.some((r) => r.failed > 0)) process.exitCode = 1;
  } finally {
    if (server) await server.stop();
  }
}

mainCli().catch((e) => {
  console.error(`load.mjs: ${e.stack ?? e}`);
  process.exit(1);
});
