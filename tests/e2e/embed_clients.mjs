// Embeddings through clients other than the raw API: `parley embed` (a file of lines embedded offline by the same
// engine) and LangChain's OpenAIEmbeddings (@langchain/openai, unmodified) against `parley serve`. Both must give the
// server's own /v1/embeddings vectors bit for bit: the CLI with several inputs in flight and chunked prefills
// (answers out of order, written in input order), raw and normalized, truncated, from a file and through stdin/stdout; then each bad
// invocation exits 1 naming its cause.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { OpenAIEmbeddings } from '@langchain/openai';
import { assertNoLeaks, main, post } from './lib.mjs';

const WORDS = 'once upon a time there was a little cat who sat on the warm mat and dreamed of fish'.split(' ');
// 40 inputs of 1 to 40 words, so that short ones finish before long ones submitted earlier.
const LINES = Array.from({ length: 40 }, (_, i) => WORDS.slice(0, 1 + ((i * 7) % 17)).join(' ') + ` ${i}`);
const f32 = (v) => Array.from(Float32Array.from(v));

async function serverVectors(base, input, extra = {}) {
  const r = await post(base, '/v1/embeddings', { input, ...extra });
  assert.equal(r.status, 200, r.text.slice(0, 300));
  return r.json.data.map((d) => d.embedding);
}

function runEmbed(parley, args, input) {
  return spawnSync(parley, ['embed', ...args], { input, encoding: 'utf8', maxBuffer: 64 << 20 });
}

const parseLines = (text) => text.trim().split('\n').map((l) => JSON.parse(l));

main('embed_clients', async (parley, ctx) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-embed-clients-'));
  try {
    const file = path.join(dir, 'qwen3-last.gguf');
    execFileSync(parley, ['gen-model', '--arch', 'qwen3', '--pooling', 'last', '--out', file, '--seed', '3']);
    const server = await ctx.start(['--max-model-len', '64'], { label: 'server', model: file });
    const want = await serverVectors(server.base, LINES);
    const wantRaw = await serverVectors(server.base, LINES.slice(0, 5), { normalize: false });
    const wantCut = await serverVectors(server.base, LINES.slice(-3), { truncate_prompt_tokens: 4 });

    // parley embed, 3 in flight, prefills chunked to 8 tokens: a long input still prefilling while shorter ones
    // after it finish, so answers arrive out of order. The server's vectors (unchunked), in input order, with each
    // input's token count.
    const input = path.join(dir, 'lines.txt');
    fs.writeFileSync(input, LINES.join('\n') + '\n');
    const out = path.join(dir, 'out.jsonl');
    const model = ['--model', file, '--max-model-len', '64'];
    const chunked = ['--max-num-batched-tokens', '16', '--long-prefill-token-threshold', '8', '--in-flight', '3'];
    const r = runEmbed(parley, [...model, '--input', input, '--output', out, ...chunked]);
    assert.equal(r.status, 0, r.stderr);
    const rows = parseLines(fs.readFileSync(out, 'utf8'));
    assert.equal(rows.length, LINES.length);
    rows.forEach((row, i) => {
      assert.equal(row.index, i);
      assert.deepEqual(row.embedding, want[i], `line ${i}: the server's vector`);
    });
    const usage = (await post(server.base, '/v1/embeddings', { input: LINES[39] })).json.usage;
    assert.equal(rows[39].tokens, usage.prompt_tokens);
    assert.match(r.stderr, /\[#{30}\] 40\/40 inputs, \d+ tokens/, 'the progress bar reaches the end');
    ctx.check();

    // stdin to stdout, raw vectors; --truncate as truncate_prompt_tokens.
    const raw = runEmbed(parley, [...model, '--no-normalize'], LINES.slice(0, 5).join('\n'));
    assert.equal(raw.status, 0, raw.stderr);
    assert.deepEqual(parseLines(raw.stdout).map((x) => x.embedding), wantRaw);
    const cut = runEmbed(parley, [...model, '--truncate', '4'], LINES.slice(-3).join('\r\n') + '\r\n');
    assert.equal(cut.status, 0, cut.stderr);
    assert.deepEqual(parseLines(cut.stdout).map((x) => x.embedding), wantCut);
    assert.ok(parseLines(cut.stdout).every((x) => x.tokens === 4));
    ctx.check();

    // Bad invocations: exit 1 with the cause.
    const long = WORDS.join(' ').repeat(8);
    const generator = path.join(dir, 'qwen3.gguf');
    execFileSync(parley, ['gen-model', '--arch', 'qwen3', '--out', generator, '--seed', '3']);
    const bad = [
      [[...model], 'a\n\nb\n', /line 2 is empty/],
      [[...model], `a\n${long}\n`, /line 2 has \d+ tokens, over the model's context of 64/],
      [[...model, '--dimensions', '8'], 'a\n', /--dimensions needs --matryoshka/],
      [[...model, '--matryoshka', '--dimensions', '65'], 'a\n', /--dimensions must be in \[1, 64\]/],
      [['--model', generator], 'a\n', /the model generates text/],
      [[...model, '--input', path.join(dir, 'missing.txt')], '', /cannot read/],
      [[...model, '--in-flight', '20', '--max-waiting', '10'], 'a\n', /--in-flight must be in \[1, --max-waiting \(10\)\]/],
    ];
    for (const [args, stdin, message] of bad) {
      const b = runEmbed(parley, args, stdin);
      assert.equal(b.status, 1, `${args.join(' ')}: exit 1\n${b.stderr}`);
      assert.match(b.stderr, message);
      assert.equal(b.stdout, '', 'no partial output');
      ctx.check();
    }
    const matryoshka = runEmbed(parley, [...model, '--matryoshka', '--dimensions', '8'], 'a cat\n');
    assert.equal(matryoshka.status, 0, matryoshka.stderr);
    const cut8 = await serverVectors(server.base, ['a cat'], { normalize: false });
    const head = cut8[0].slice(0, 8), n = Math.sqrt(head.reduce((s, x) => s + x * x, 0));
    const got = parseLines(matryoshka.stdout)[0].embedding;
    assert.equal(got.length, 8);
    got.forEach((x, k) => assert.ok(Math.abs(x - head[k] / n) < 1e-6, 'the first 8 values, normalized'));
    ctx.check();

    // LangChain's OpenAIEmbeddings: embedQuery and embedDocuments equal the server's vectors (as float32: the
    // client may ask for base64).
    const lc = new OpenAIEmbeddings({ model: 'qwen3-last', apiKey: 'none', configuration: { baseURL: `${server.base}/v1` },
                                      maxRetries: 0 });
    assert.deepEqual(f32(await lc.embedQuery(LINES[3])), f32(want[3]));
    const docs = await lc.embedDocuments(LINES.slice(0, 10));
    assert.equal(docs.length, 10);
    docs.forEach((v, i) => assert.deepEqual(f32(v), f32(want[i]), `document ${i}`));
    ctx.check();
    await assertNoLeaks(server.base, { model: 'qwen3-last', label: 'server' });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
