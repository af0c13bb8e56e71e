// --cpu-affinity: with --threads below the process's CPUs, the worker thread runs only on the last CPU and every
// other thread of the server (CAF's, HTTP's, the signal thread) only on the rest; with `off`, or with every CPU
// computing, no thread is pinned. The tokens are the same either way (greedy and seeded requests).
//   node tests/e2e/cpu_affinity.mjs <path-to-parley>
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { main, complete } from './lib.mjs';

// "0-2,5" -> [0, 1, 2, 5]
function parseCpuList(text) {
  const cpus = [];
  for (const part of text.trim().split(',')) {
    const [a, b] = part.split('-').map(Number);
    for (let c = a; c <= (b ?? a); c += 1) cpus.push(c);
  }
  return cpus;
}

const allowedOf = (status) => parseCpuList(status.match(/Cpus_allowed_list:\s*(\S+)/)[1]);

// Every thread of the process: its name and the CPUs it may run on.
function threadsOf(pid) {
  return fs.readdirSync(`/proc/${pid}/task`).map((tid) => {
    const status = fs.readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
    return { name: status.match(/Name:\s*(.*)/)[1], cpus: allowedOf(status) };
  });
}

const BODIES = [
  { prompt: 'Once upon a time', max_tokens: 24, temperature: 0 },
  { prompt: 'The little dog', max_tokens: 24, temperature: 0.8, seed: 7 },
];
const outputs = async (base) => Promise.all(BODIES.map(async (b) => (await complete(base, b)).choices[0].text));

main('cpu_affinity', async (parley, t) => {
  const allowed = allowedOf(fs.readFileSync('/proc/self/status', 'utf8'));
  if (allowed.length < 2) {
    console.log(`SKIP cpu_affinity: this process may use ${allowed.length} CPU (nothing to split)`);
    return;
  }
  const last = allowed[allowed.length - 1];
  const rest = allowed.slice(0, -1);

  const pinned = await t.start(['--threads', '1'], { label: 'auto' });
  const want = await outputs(pinned.base);  // the worker pins itself on its first step
  const threads = threadsOf(pinned.proc.pid);
  const computing = threads.filter((th) => th.cpus.length === 1 && th.cpus[0] === last);
  assert.equal(computing.length, 1, `one thread (the worker) on CPU ${last}: ${JSON.stringify(threads)}`);
  for (const th of threads.filter((x) => x !== computing[0]))
    assert.deepEqual(th.cpus, rest, `thread ${th.name} on the other CPUs`);
  assert.match(pinned.logs(), new RegExp(`the worker computes on CPUs ${last}, the actor threads run on CPUs ${rest.join(',')}`));
  t.check();

  const off = await t.start(['--threads', '1', '--cpu-affinity', 'off'], { label: 'off' });
  assert.deepEqual(await outputs(off.base), want, 'the same tokens with the threads unpinned');
  for (const th of threadsOf(off.proc.pid)) assert.deepEqual(th.cpus, allowed, `thread ${th.name} unpinned`);
  t.check();

  const everyCpu = await t.start(['--threads', String(allowed.length)], { label: 'every CPU computing' });
  assert.deepEqual(await outputs(everyCpu.base), want, 'the same tokens on every CPU');
  for (const th of threadsOf(everyCpu.proc.pid)) assert.deepEqual(th.cpus, allowed, `thread ${th.name} unpinned`);
  assert.doesNotMatch(everyCpu.logs(), /thread affinity/);
  t.check();
});
