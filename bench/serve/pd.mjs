#!/usr/bin/env node
// PD disaggregation against colocated serving on the same machine: starts a colocated server,
// and a prefill plus a decode instance, drives each with load.mjs at the same Poisson request rate, and
// prints TTFT and TPOT p50/p99 with the KV bytes transferred per request. The colocated server gets the
// threads the two PD instances share, so both sides use the same cores.
//
//   node bench/serve/pd.mjs build/parley [--request-rate 8] [--num-requests 200] [--prompt-tokens 256]
//        [--output-tokens 64] [--threads 2] [-- extra parley serve flags]
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const models = process.env.PARLEY_MODELS_DIR ?? path.resolve(here, '..', '..', '..', 'shared', 'models');
const argv = process.argv.slice(2);
const parley = argv.shift();
if (!parley || !fs.existsSync(parley)) {
  console.error('usage: node bench/serve/pd.mjs PARLEY [--request-rate R] [--num-requests N] [--prompt-tokens P] ' +
                '[--output-tokens O] [--threads T] [-- serve flags]');
  process.exit(2);
}
const o = { rate: '8', requests: '200', prompt: '256', output: '64', threads: 2, extra: [] };
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--') { o.extra = argv.slice(i + 1); break; }
  const v = argv[++i];
  if (a === '--request-rate') o.rate = v;
  else if (a === '--num-requests') o.requests = v;
  else if (a === '--prompt-tokens') o.prompt = v;
  else if (a === '--output-tokens') o.output = v;
  else if (a === '--threads') o.threads = Number(v);
  else { console.error(`unknown option ${a}`); process.exit(2); }
}

const servers = [];
process.on('exit', () => servers.forEach((s) => s.kill('SIGKILL')));

// Starts `parley serve` on a free port; resolves with its base URL and, for a prefill instance, its KV port.
function start(flags) {
  const args = ['serve', '--model', path.join(models, 'stories260K.bin'), '--tokenizer', path.join(models, 'tok512.bin'),
                '--port', '0', '--log-level', 'info', '--max-waiting', '100000', ...o.extra, ...flags];
  const proc = spawn(parley, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  servers.push(proc);
  return new Promise((resolve, reject) => {
    let log = '';
    const onData = (chunk) => {
      log += chunk.toString();
      const m = log.match(/http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) {
        const kv = log.match(/published on port (\d+)/);
        resolve({ base: `http://127.0.0.1:${m[1]}`, kvPort: kv ? Number(kv[1]) : null, proc });
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => reject(new Error(`parley ${flags.join(' ')} exited (${code}):\n${log.slice(-2000)}`)));
  });
}

async function metric(base, name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`));
  return line ? Number(line.split(' ').pop()) : 0;
}

function load(base) {
  const out = path.join(os.tmpdir(), `parley-pd-${process.pid}-${Date.now()}.json`);
  execFileSync(process.execPath, [path.join(here, 'load.mjs'), '--url', base, '--request-rate', o.rate, '--num-requests', o.requests,
                                  '--prompt-tokens', o.prompt, '--output-tokens', o.output, '--json', out], { stdio: ['ignore', 'ignore', 'inherit'] });
  const r = JSON.parse(fs.readFileSync(out, 'utf8'));
  fs.unlinkSync(out);
  return r;
}

const half = Math.max(1, Math.floor(o.threads / 2));
const colocated = await start(['--threads', String(o.threads)]);
const colocatedRun = load(colocated.base);
colocated.proc.kill('SIGTERM');
const prefill = await start(['--threads', String(half), '--role', 'prefill', '--kv-port', '0']);
const decode = await start(['--threads', String(half), '--role', 'decode', '--prefill-peers', `127.0.0.1:${prefill.kvPort}`]);
await new Promise((r) => setTimeout(r, 500));  // the decode instance connects to its prefill instance
const pdRun = load(decode.base);
const bytes = await metric(decode.base, 'parley:kv_transfer_bytes_total');
const transfers = await metric(decode.base, 'parley:kv_transfer_latency_seconds_count');
const latency = await metric(decode.base, 'parley:kv_transfer_latency_seconds_sum');
const computedHere = await metric(decode.base, 'parley:prefill_tokens_computed_total');

const f = (x) => x.toFixed(1);
console.log(`stories260K, ${o.requests} requests at ${o.rate}/s (Poisson), ${o.prompt} prompt + ${o.output} output tokens, ` +
            `${o.threads} threads colocated, ${half} + ${half} for 1P+1D\n`);
console.log('| serving | TTFT p50 (ms) | TTFT p99 (ms) | TPOT p50 (ms) | TPOT p99 (ms) | output tok/s | KV bytes / request | transfer mean (ms) |');
console.log('|---|---|---|---|---|---|---|---|');
for (const [name, r, kv, lat] of [['colocated', colocatedRun, '-', '-'],
  ['1P+1D', pdRun, (bytes / Math.max(1, transfers)).toFixed(0), f(1000 * latency / Math.max(1, transfers))]]) {
  console.log(`| ${name} | ${f(r.ttft_ms.p50)} | ${f(r.ttft_ms.p99)} | ${f(r.tpot_ms.p50)} | ${f(r.tpot_ms.p99)} | ` +
              `${r.output_token_throughput.toFixed(0)} | ${kv} | ${lat} |`);
}
console.log(`\n${transfers} transfers; the decode instance computed ${computedHere} prompt tokens itself.`);
process.exit(0);
