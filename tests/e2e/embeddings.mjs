// POST /v1/embeddings end to end, against llama.cpp on the same files: `parley gen-model --arch qwen3 --pooling last`
// and `--arch llama --pooling mean` (and qwen3 with cls, and the encoders bert and nomic-bert) write tiny F32
// embedding models (the file's
// {arch}.pooling_type makes `parley serve` embed); node-llama-cpp's embedding context pools the same token ids
// (BOS/EOS as it adds them). Per input: cosine distance within 1e-4, raw (normalize: false) and normalized
// (the default). Then: a batch of inputs equals each alone, the official `openai` client in float and base64,
// truncate_prompt_tokens, metrics, every bad input a 400 in OpenAI's shape, the task routing both ways, and no
// KV block left behind.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { assertErrorShape, assertNoLeaks, get, main, metric, post, randomTokenIds } from './lib.mjs';
import { disposeLlamaOracle, embeddingInput, llamaEmbedding } from './llama_oracle.mjs';

process.env.PARLEY_E2E_TIMEOUT_MS ??= '300000';
const MODELS = [
  { arch: 'qwen3', pooling: 'last' },
  { arch: 'llama', pooling: 'mean' },
  { arch: 'qwen3', pooling: 'cls' },
  // Encoders: bidirectional attention, post-LayerNorm, token types; BERT's learned positions, nomic-bert's RoPE.
  { arch: 'bert', pooling: 'cls' },
  { arch: 'bert', pooling: 'mean' },
  { arch: 'nomic-bert', pooling: 'mean' },
];
const LENGTHS = [6, 40, 130];
const TOL = 1e-4;      // cosine distance
const REL_TOL = 2e-3;  // |ours - llama.cpp's| / |llama.cpp's|: its embedding context keeps an F16 KV cache

function cosineDistance(a, b) {
  assert.equal(a.length, b.length, 'vectors of one length');
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; ++i) dot += a[i] * b[i], na += a[i] * a[i], nb += b[i] * b[i];
  return 1 - dot / Math.sqrt(na * nb);
}

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

async function embed(base, body) {
  const r = await post(base, '/v1/embeddings', body);
  assert.equal(r.status, 200, r.text.slice(0, 300));
  return r.json;
}

main('embeddings', async (parley, ctx) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-embed-'));
  try {
    for (const { arch, pooling } of MODELS) {
      const name = `${arch}-${pooling}`;
      const file = path.join(dir, `${name}.gguf`);
      execFileSync(parley, ['gen-model', '--arch', arch, '--pooling', pooling, '--out', file, '--seed', '3']);
      const server = await ctx.start([], { label: name, model: file });
      let worst = 0, worstRel = 0;
      for (const [k, n] of LENGTHS.entries()) {
        const ids = await embeddingInput(file, randomTokenIds(n, 7 * k + arch.length));
        const want = await llamaEmbedding(file, ids);
        const raw = (await embed(server.base, { input: ids, normalize: false })).data[0].embedding;
        const unit = (await embed(server.base, { input: ids })).data[0].embedding;
        const where = `${name}, ${ids.length} tokens`;
        assert.equal(raw.length, want.length, `${where}: the model's width`);
        for (const [got, what] of [[raw, 'raw'], [unit, 'normalized']]) {
          const d = cosineDistance(got, want);
          worst = Math.max(worst, d);
          assert.ok(d <= TOL, `${where}: ${what} cosine distance ${d} to llama.cpp's`);
        }
        // Raw is llama.cpp's own vector, scale included (cosine alone misses a scale: the final norm's, say).
        const rel = norm(raw.map((x, i) => x - want[i])) / norm(want);
        worstRel = Math.max(worstRel, rel);
        assert.ok(rel <= REL_TOL, `${where}: raw differs from llama.cpp's by ${rel} of its norm`);
        assert.ok(Math.abs(norm(unit) - 1) < 1e-5, `${where}: normalized norm ${norm(unit)}`);
        ctx.check();
      }
      ctx.note(`${name} ${worst.toExponential(1)} (raw ${worstRel.toExponential(1)})`);

      // Every input of a batch gets the vector it gets alone, bit for bit, in input order.
      const inputs = LENGTHS.map((n, k) => randomTokenIds(n, 100 + k));
      const batch = await embed(server.base, { input: inputs });
      assert.deepEqual(batch.data.map((d) => d.index), [0, 1, 2]);
      for (const [k, ids] of inputs.entries())
        assert.deepEqual(batch.data[k].embedding, (await embed(server.base, { input: ids })).data[0].embedding,
                         `${name}: input ${k} in a batch`);
      assert.equal(batch.usage.prompt_tokens, LENGTHS.reduce((a, b) => a + b, 0));
      assert.equal(batch.usage.total_tokens, batch.usage.prompt_tokens);
      assert.equal(batch.object, 'list');
      assert.equal(batch.model, name);
      ctx.check();
      await assertNoLeaks(server.base, { model: name, label: name });
      await server.stop();
    }

    // One server for the client, the options and the bad inputs: qwen3 with last-token pooling, a short context.
    const file = path.join(dir, 'qwen3-last.gguf');
    const model = 'qwen3-last';
    const server = await ctx.start(['--max-model-len', '64', '--admin-token', 'adm'], { label: 'api', model: file });
    const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'none', maxRetries: 0, timeout: 30000 });
    const before = { pooled: await metric(server.base, 'parley:pooling_requests_total', { model_name: model }),
                     prompt: await metric(server.base, 'parley:prompt_tokens_total', { model_name: model }),
                     pooledTokens: await metric(server.base, 'parley:pooling_prompt_tokens_total', { model_name: model }),
                     admin: (await get(server.base, '/admin/requests', { headers: { Authorization: 'Bearer adm' } })).json.pooling };
    const floats = await client.embeddings.create({ model, input: ['Once upon a time', 'a cat'], encoding_format: 'float' });
    const base64 = await client.embeddings.create({ model, input: ['Once upon a time', 'a cat'] });  // the client asks base64
    assert.equal(floats.data.length, 2);
    for (let k = 0; k < 2; ++k) {
      assert.equal(floats.data[k].object, 'embedding');
      assert.equal(floats.data[k].embedding.length, 64);
      // base64 carries the float32 values themselves: equal to the JSON numbers read back as float32.
      assert.deepEqual(Array.from(base64.data[k].embedding), Array.from(Float32Array.from(floats.data[k].embedding)));
    }
    assert.ok(floats.usage.prompt_tokens > 4);
    ctx.check();
    const after = { pooled: await metric(server.base, 'parley:pooling_requests_total', { model_name: model }),
                    prompt: await metric(server.base, 'parley:prompt_tokens_total', { model_name: model }) };
    assert.equal(after.pooled - before.pooled, 4, 'four pooling requests counted');
    assert.equal(after.prompt - before.prompt, 2 * floats.usage.prompt_tokens, 'their prompt tokens counted');
    assert.equal(await metric(server.base, 'parley:pooling_prompt_tokens_total', { model_name: model }) - before.pooledTokens,
                 2 * floats.usage.prompt_tokens, 'and counted as pooled tokens');
    const admin = (await get(server.base, '/admin/requests', { headers: { Authorization: 'Bearer adm' } })).json;
    assert.equal(admin.pooling.requests - before.admin.requests, 4, 'the admin view counts the pooling requests');
    assert.equal(admin.pooling.tokens - before.admin.tokens, 2 * floats.usage.prompt_tokens, 'and their tokens');

    // truncate_prompt_tokens keeps the last tokens: the same vector as those tokens alone.
    const long = randomTokenIds(100, 5);
    const cut = await embed(server.base, { input: long, truncate_prompt_tokens: 10 });
    assert.deepEqual(cut.data[0].embedding, (await embed(server.base, { input: long.slice(-10) })).data[0].embedding);
    assert.equal(cut.usage.prompt_tokens, 10);
    ctx.check();

    const bad = [
      [{ input: '' }, 'input', /cannot be empty/],
      [{ input: [] }, 'input', /cannot be empty/],
      [{ input: ['a', ''] }, 'input', /cannot be empty/],
      [{ input: randomTokenIds(65, 1) }, 'input', /maximum context length is 64 tokens\. However, you requested 65/],
      [{ input: [1, 100000] }, 'input', /Token id 100000 is out of vocabulary/],
      [{ input: 'x', dimensions: 8 }, 'dimensions', /does not support matryoshka/],
      [{ input: 'x', encoding_format: 'int8' }, 'encoding_format', /float.*base64/],
      [{ input: 'x', truncate_prompt_tokens: 65 }, 'truncate_prompt_tokens', /greater than max_model_len/],
    ];
    for (const [body, param, message] of bad) {
      const e = assertErrorShape(await post(server.base, '/v1/embeddings', body), 400, JSON.stringify(body).slice(0, 80));
      assert.equal(e.param, param);
      assert.match(e.message, message);
      ctx.check();
    }
    await assert.rejects(client.embeddings.create({ model, input: '' }), (err) => err.status === 400);
    const generation = assertErrorShape(await post(server.base, '/v1/completions', { prompt: 'x', max_tokens: 2 }), 400,
                                        'a completion on an embedding server');
    assert.match(generation.message, /serves embeddings \(--task embed\)/);
    await assertNoLeaks(server.base, { model, label: 'api' });
    await server.stop();

    // The same file with --task generate: completions work, /v1/embeddings is a 400 naming --task embed.
    const generating = await ctx.start(['--task', 'generate'], { label: 'generate', model: file });
    const r = await post(generating.base, '/v1/completions', { prompt: [1, 2, 3], max_tokens: 2 });
    assert.equal(r.status, 200, r.text);
    const refused = assertErrorShape(await post(generating.base, '/v1/embeddings', { input: 'x' }), 400,
                                     'embeddings on a generating server');
    assert.match(refused.message, /--task embed/);
    await assertNoLeaks(generating.base, { model, label: 'generate' });
    ctx.check();
  } finally {
    await disposeLlamaOracle();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
