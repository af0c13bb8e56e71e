// Configuration files (issue 25): every file in config/ starts a server that answers (the CUDA one is refused with
// its reason where no GPU is), the PD pair serves end to end, values from a file reach the engine and the server,
// the command line overrides the file, --print-config reads back to itself, /admin/config shows the configuration
// with secrets hidden, and bad files fail with their own message naming the file, line and key.
//   node tests/e2e/config_files.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { main, complete, get, post, readMetrics, metricValue, sleep, REPO_ROOT, MODEL_PATH, TOKENIZER_PATH }
  from './lib.mjs';

const CONFIG_DIR = path.join(REPO_ROOT, 'config');
const config = (name) => path.join(CONFIG_DIR, name);
const MODEL = ['--model', MODEL_PATH, '--tokenizer', TOKENIZER_PATH];
// Long enough for the story to repeat itself: n-gram speculation then has drafts to propose.
const GREEDY = { prompt: 'Once upon a time, there was a', max_tokens: 120, temperature: 0 };
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-config-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

function write(name, text) {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, text);
  return file;
}

// Runs parley to completion (a parse error, --print-config, generate).
function run(parley, args) {
  const r = spawnSync(parley, args, { encoding: 'utf8', timeout: 60000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

// A command that must fail: its exit status is not 0 and stderr holds `want` (every string of it).
function refuses(parley, args, want, what) {
  const r = run(parley, args);
  assert.notEqual(r.code, 0, `${what}: exit 0\n${r.out}`);
  for (const w of [want].flat()) assert.ok(r.err.includes(w), `${what}: stderr lacks ${JSON.stringify(w)}:\n${r.err}`);
  return r.err;
}

// --print-config of `args`, fed back with --config, prints the same text. Returns it.
function printsItself(parley, args, what) {
  const first = run(parley, [...args, '--print-config']);
  assert.equal(first.code, 0, `${what}: --print-config failed: ${first.err}`);
  const file = write('printed.toml', first.out);
  const command = args[0];
  const again = run(parley, [command, '--config', file, '--print-config']);
  assert.equal(again.code, 0, `${what}: --config of the printed file failed: ${again.err}`);
  assert.equal(again.out, first.out, `${what}: print, load, print differs`);
  return first.out;
}

const adminGet = (base, route, token) => get(base, route, { headers: { Authorization: `Bearer ${token}` } });

main('config_files', async (parley, t) => {
  // Each file of config/ is exercised below: a new one must be added here.
  const files = fs.readdirSync(CONFIG_DIR).filter((f) => f.endsWith('.toml')).sort();
  assert.deepEqual(files, ['admin-console.toml', 'cpu-colocated.toml', 'cuda-graphs.toml', 'ngram-speculation.toml',
                           'pd-decode.toml', 'pd-prefill.toml']);
  const adminFile = write('admin-token', 'adm-secret-1\n');
  const keyFile = write('api-key', 'key-secret-2\n');
  const fileFlags = { 'admin-console.toml': ['--admin-token-file', adminFile, '--api-key-file', keyFile] };

  // --print-config reads back to itself for every file (with the model given on the command line).
  for (const f of files) {
    const printed = printsItself(parley, ['serve', '--config', config(f), ...MODEL, ...(fileFlags[f] ?? [])], f);
    assert.ok(printed.includes(`model="${MODEL_PATH}"`), `${f}: the command line's --model is not in:\n${printed}`);
  }
  const printed = printsItself(parley, ['serve', '--config', config('cpu-colocated.toml'), ...MODEL, '--port', '9123'],
                               'override');
  assert.match(printed, /^port=9123$/m, 'the command line overrides the file');
  assert.match(printed, /^max-num-seqs=32$/m, 'the file sets max-num-seqs');
  assert.match(printed, /^max-waiting=256$/m, 'the file sets max-waiting');
  assert.match(printed, /^block-size=16$/m, 'defaults are printed');
  // Flags that default on print as on: read back, they must not turn off.
  const defaults = printsItself(parley, ['serve', ...MODEL], 'defaults');
  for (const on of ['async-scheduling', 'enable-prefix-caching', 'delayed-split'])
    assert.match(defaults, new RegExp(`^${on}=true$`, 'm'), `${on} defaults on`);
  assert.ok(!/^(prefill-peers|devices|api-key|speculative-config)=/m.test(defaults),
            `unset options are printed:\n${defaults}`);
  // Unedited, a file stops at the model it names, with where to edit it.
  refuses(parley, ['serve', '--config', config('cpu-colocated.toml'), '--print-config'],
          `${config('cpu-colocated.toml')}:7: model: --model: File does not exist: /path/to/model.gguf`,
          'unedited model');
  t.check();

  // Colocated CPU serving.
  const colocated = await t.start(['--config', config('cpu-colocated.toml')], { label: 'cpu-colocated' });
  const want = (await complete(colocated.base, GREEDY)).choices[0].text;
  assert.ok(want.length > 0, 'cpu-colocated: empty completion');
  t.check();

  // The PD pair: the decode instance prefills on the prefill instance (command line: free ports, the real peer).
  const prefill = await t.start(['--config', config('pd-prefill.toml'), '--kv-port', '0'], { label: 'pd-prefill' });
  const kvPort = Number(prefill.logs().match(/KV transfer actor published on port (\d+)/)?.[1]);
  assert.ok(kvPort > 0, 'pd-prefill: no "published on port" line');
  const decode = await t.start(['--config', config('pd-decode.toml'), '--prefill-peers', `127.0.0.1:${kvPort}`,
                                '--admin-token', 'adm'], { label: 'pd-decode' });
  for (let deadline = Date.now() + 10000; ; await sleep(100)) {
    const peers = JSON.parse((await adminGet(decode.base, '/admin/requests', 'adm')).text).kv_transfer.peers;
    if (peers.some((p) => p.up)) break;
    assert.ok(Date.now() < deadline, `pd-decode: peer never up: ${JSON.stringify(peers)}`);
  }
  assert.equal((await complete(decode.base, GREEDY)).choices[0].text, want, 'PD pair differs from colocated');
  const d = await readMetrics(decode.base), p = await readMetrics(prefill.base);
  assert.equal(metricValue(d, 'parley:kv_transfer_latency_seconds_count'), 1, 'one KV transfer');
  assert.equal(metricValue(d, 'parley:prefill_tokens_computed_total'), 0, 'the decode instance computed the prompt');
  assert.ok(metricValue(p, 'parley:prefill_tokens_computed_total') > 0, 'the prefill instance computed nothing');
  t.check();

  // N-gram speculation: drafts are proposed and verified, the greedy output is unchanged.
  const ngram = await t.start(['--config', config('ngram-speculation.toml')], { label: 'ngram' });
  assert.equal((await complete(ngram.base, GREEDY)).choices[0].text, want, 'speculation changed the output');
  const spec = await readMetrics(ngram.base);
  assert.ok(metricValue(spec, 'parley:spec_decode_num_drafts_total') > 0, 'ngram: no drafts');
  assert.ok(metricValue(spec, 'parley:spec_decode_num_accepted_tokens_total') > 0, 'ngram: no draft accepted');
  t.check();

  // CUDA with graphs: refused with its reason where this build or machine has no GPU; else it serves.
  try {
    const cuda = await t.start(['--config', config('cuda-graphs.toml')], { label: 'cuda-graphs', timeoutMs: 120000 });
    assert.ok((await complete(cuda.base, GREEDY)).choices[0].text.length > 0, 'cuda-graphs: empty completion');
    t.note('cuda-graphs served on a GPU');
  } catch (e) {
    assert.match(String(e.message), /exited \(code 1,[\s\S]*parley: error: --device cuda: \S/, 'cuda-graphs refusal');
    t.note('cuda-graphs refused: no GPU');
  }
  t.check();

  // The admin console: both secrets from files; /admin/config shows the file paths, never the secrets.
  const admin = await t.start(['--config', config('admin-console.toml'), ...fileFlags['admin-console.toml']],
                              { label: 'admin-console' });
  assert.equal((await post(admin.base, '/v1/completions', GREEDY)).status, 401, 'no API key: 401');
  const keyed = await post(admin.base, '/v1/completions', GREEDY,
                           { headers: { Authorization: 'Bearer key-secret-2' } });
  assert.equal(keyed.status, 200, `the key from the file: ${keyed.text}`);
  assert.equal((await adminGet(admin.base, '/admin/config', 'key-secret-2')).status, 401,
               'the API key is no admin token');
  const shown = await adminGet(admin.base, '/admin/config', 'adm-secret-1');
  assert.equal(shown.status, 200, `/admin/config: ${shown.text}`);
  assert.match(shown.headers.get('content-type'), /application\/toml/);
  assert.ok(shown.text.includes(`admin-token-file="${adminFile}"`) && shown.text.includes(`api-key-file="${keyFile}"`),
            `/admin/config lacks the token files:\n${shown.text}`);
  assert.ok(!shown.text.includes('adm-secret-1') && !shown.text.includes('key-secret-2'),
            '/admin/config shows a secret');
  assert.equal((await adminGet(admin.base, '/admin/requests', 'adm-secret-1')).status, 200);
  t.check();

  // Values from a file reach the engine and the server; a plain --admin-token is hidden in /admin/config.
  const values = write('values.toml', [
    'num-kv-blocks = 77', 'async-scheduling = false', 'max-body-bytes = 2000', 'served-model-name = "from-config"',
    'enable-prefix-caching = false', ''].join('\n'));
  const valued = await t.start(['--config', values, '--admin-token', 'tok-plain-3'], { label: 'values' });
  const view = JSON.parse((await adminGet(valued.base, '/admin/requests', 'tok-plain-3')).text);
  assert.equal(view.kv_blocks.total, 77, 'num-kv-blocks from the file');
  assert.equal(view.steps.async_scheduling, false, 'async-scheduling from the file');
  assert.deepEqual((await get(valued.base, '/v1/models')).json.data.map((m) => m.id), ['from-config']);
  const big = await post(valued.base, '/v1/completions', { model: 'from-config', prompt: 'x'.repeat(3000) });
  assert.equal(big.status, 413, 'max-body-bytes from the file');
  const valuedConfig = (await adminGet(valued.base, '/admin/config', 'tok-plain-3')).text;
  assert.match(valuedConfig, /^admin-token="\(hidden\)"$/m);
  assert.match(valuedConfig, /^enable-prefix-caching=false$/m);
  assert.ok(!valuedConfig.includes('tok-plain-3'), '/admin/config shows the admin token');
  assert.equal((await get(valued.base, '/admin/config')).status, 401, '/admin/config without the token');
  t.check();

  // generate reads the same keys, prompt included; it prints what the same flags print.
  const gen = write('generate.toml', 'prompt = "Once upon a time"\nmax-tokens = 12\ntemperature = 0\n');
  const fromFile = run(parley, ['generate', '--config', gen, ...MODEL]);
  const fromFlags = run(parley, ['generate', ...MODEL, '--prompt', 'Once upon a time', '--max-tokens', '12',
                                 '--temperature', '0']);
  assert.equal(fromFile.code, 0, fromFile.err);
  assert.ok(fromFile.out.length > 0 && fromFile.out === fromFlags.out, `generate: ${fromFile.out} vs ${fromFlags.out}`);
  assert.match(printsItself(parley, ['generate', '--config', gen], 'generate'), /^prompt="Once upon a time"$/m);
  t.check();

  // Bad input: each its own message, with the file, the line and the key.
  const bad = (name, text) => ['serve', '--config', write(name, text), '--print-config'];
  const f = (name) => path.join(tmp, name);
  refuses(parley, bad('unknown.toml', '# a comment\nport = 0\nmax-num-seqz = 4\n'),
          `${f('unknown.toml')}:3: max-num-seqz: unknown key: not a flag of parley serve`, 'unknown key');
  refuses(parley, bad('type.toml', 'port = 0\nthreads = "four"\n'),
          `${f('type.toml')}:2: threads: --threads: expected a number, got four`, 'wrong type');
  refuses(parley, bad('float.toml', 'max-num-seqs = 2.5\n'), `${f('float.toml')}:1: max-num-seqs: Could not convert`,
          'a float for an integer');
  refuses(parley, bad('flag.toml', '\nenforce-eager = 3\n'),
          `${f('flag.toml')}:2: enforce-eager: --enforce-eager: expected true or false, got 3`, 'a number for a flag');
  refuses(parley, bad('range.toml', 'host = "127.0.0.1"\n\nport = 70000\n'),
          `${f('range.toml')}:3: port: --port: must be in [0, 65535], got 70000`, 'port out of range');
  refuses(parley, bad('threads.toml', 'threads = -1\n'),
          `${f('threads.toml')}:1: threads: --threads: must be at least 0, got -1`,
          'threads out of range');
  refuses(parley, bad('gpu.toml', 'gpu-memory-utilization = 0\n'),
          `${f('gpu.toml')}:1: gpu-memory-utilization: --gpu-memory-utilization: must be in (0, 1], got 0`,
          'utilization 0');
  refuses(parley, bad('role.toml', 'port = 0\nrole = "both"\n'),
          `${f('role.toml')}:2: role: --role: must be colocated, prefill or decode, got 'both'`, 'a role that is none');
  refuses(parley, bad('twice.toml', 'port = 1\nthreads = 1\nport = 2\n'),
          `${f('twice.toml')}:1: port: --port is set twice (lines 1 and 3)`, 'a key set twice');
  refuses(parley, bad('list-twice.toml', 'prefill-peers = ["a:1"]\nprefill-peers = ["b:2"]\n'),
          `${f('list-twice.toml')}:1: prefill-peers: --prefill-peers is set twice (lines 1 and 2)`, 'a list set twice');
  refuses(parley, bad('section.toml', 'port = 1\n[serve]\nthreads = 1\n'), `${f('section.toml')}:2: [serve]: sections`,
          'a section');
  refuses(parley, bad('notcfg.toml', 'print-config = true\n'),
          `${f('notcfg.toml')}:1: print-config: serve.print-config: This option is not allowed in a configuration file`,
          'a command-line-only key');
  refuses(parley, ['serve', '--config', f('absent.toml')],
          `parley: error: config file ${f('absent.toml')}: not found or not readable`,
          'a missing file');
  refuses(parley, ['generate', '--config', write('serve-only.toml', 'prompt = "x"\nport = 1\n')],
          `${f('serve-only.toml')}:2: port: unknown key: not a flag of parley generate`, 'a serve key for generate');
  refuses(parley, ['serve', '--config', f('type.toml'), '--config', f('range.toml')], '--config: give one file',
          'two files');
  // A value the command line replaces is never read: the file's threads = -1 does not stop --threads 2.
  const overridden = run(parley, ['serve', '--config', f('threads.toml'), '--threads', '2', '--print-config']);
  assert.equal(overridden.code, 0, overridden.err);
  assert.match(overridden.out, /^threads=2$/m);
  // The same checks on the command line name the flag only, even beside a file.
  const cli = refuses(parley, ['serve', '--port', '70000'], 'parley: error: --port: must be in [0, 65535], got 70000',
                      'flag out of range');
  const beside = ['serve', '--config', write('port.toml', 'port = 1\n'), '--port', '70000'];
  assert.equal(refuses(parley, beside, [], 'beside a file'), cli,
               'an error of the command line is not put on the file');
  // Secrets from files.
  const empty = write('empty', '\n');
  refuses(parley, ['serve', '--admin-token-file', empty], `--admin-token-file: ${empty} is empty`,
          'an empty token file');
  refuses(parley, ['serve', '--api-key-file', f('none')], `--api-key-file: cannot read ${f('none')}`,
          'an unreadable key file');
  refuses(parley, ['serve', '--api-key', 'k', '--api-key-file', keyFile], '--api-key excludes --api-key-file', 'both');
  refuses(parley, ['serve', '--admin-token-file', write('two', 'a\nb\n')], 'holds more than one line', 'two lines');
  t.check();
});
