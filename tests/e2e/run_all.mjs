// Runs every end-to-end test in sequence, each in its own node process; exits non-zero if any fails.
//   node tests/e2e/run_all.mjs <path-to-parley> [test-name ...]   (names from TESTS, or EXTRA such as shutdown)
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const TESTS = ['openai_client', 'bad_inputs', 'concurrency', 'preemption', 'disconnects', 'prefix_cache',
               'openapi_conformance'];
// Run only when named: they check behaviour the server does not have yet (see each file's header).
const EXTRA = ['shutdown'];

const [parley, ...only] = process.argv.slice(2);
if (!parley) {
  console.error('usage: node tests/e2e/run_all.mjs <path-to-parley> [test-name ...]');
  process.exit(2);
}
const unknown = only.filter((n) => !TESTS.includes(n) && !EXTRA.includes(n));
if (unknown.length) {
  console.error(`unknown test(s): ${unknown.join(', ')}; known: ${[...TESTS, ...EXTRA].join(', ')}`);
  process.exit(2);
}
const chosen = only.length ? only : TESTS;
const failed = [];
for (const name of chosen) {
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [path.join(here, `${name}.mjs`), path.resolve(parley)], { stdio: 'inherit' });
  if (r.status !== 0) failed.push(`${name} (exit ${r.status ?? r.signal}, ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}
console.log(failed.length ? `e2e: ${failed.length}/${chosen.length} failed: ${failed.join(', ')}` : `e2e: all ${chosen.length} passed`);
process.exit(failed.length ? 1 : 0);
