// POST /v1/rerank, /rerank and /v1/score end to end, against llama.cpp on the same file: `parley gen-model --arch
// qwen3 --pooling rank` writes a tiny F32 reranker in Qwen3-Reranker's form (cls.output.weight over the labels
// "yes" and "no"; llama.cpp's RANK pooling takes the last token's final-normed state through it and softmaxes),
// `--arch bert --pooling rank` a cross-encoder (the first token through cls.weight, tanh, one logit), and
// node-llama-cpp's ranking context scores the same query/document token ids. Per pair: the score within 1e-3 and
// the same input length. Then: a batch of documents equals each alone bit for bit, the response shapes (sorted,
// top_n, return_documents, /rerank, /v1/score 1:N and N:N), truncate_prompt_tokens as Hugging Face's tokenizers
// truncate a pair, every bad input a 400 in OpenAI's shape, the task routing
// both ways, and no KV block left behind.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { VOCAB, assertErrorShape, assertNoLeaks, main, post, randomTokenIds } from './lib.mjs';
import { disposeLlamaOracle, llamaRank, rankingInput } from './llama_oracle.mjs';

process.env.PARLEY_E2E_TIMEOUT_MS ??= '300000';
const TOL = 1e-3;  // |score - llama.cpp's|: its context keeps an F16 KV cache
const PAIRS = [[4, 6], [12, 40], [30, 100], [3, 1]];  // query and document lengths (token ids)

async function rerank(base, body, route = '/v1/rerank') {
  const r = await post(base, route, body);
  assert.equal(r.status, 200, r.text.slice(0, 300));
  return r.json;
}

main('rerank', async (parley, ctx) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-rerank-'));
  try {
    // Each pair's score is llama.cpp's: Qwen3-Reranker's form, and a BERT cross-encoder (cls.weight, tanh,
    // cls.output with one label, a sigmoid) with bidirectional attention.
    let server;  // qwen3's serves the rest
    for (const arch of ['bert', 'qwen3']) {
      const file = path.join(dir, `${arch}-rank.gguf`);
      execFileSync(parley, ['gen-model', '--arch', arch, '--pooling', 'rank', '--out', file, '--seed', '3']);
      const ranker = await ctx.start([], { label: `${arch}-rank`, model: file });
      let worst = 0;
      const scores = [];
      for (const [k, [nq, nd]] of PAIRS.entries()) {
        const query = randomTokenIds(nq, 11 * k + 1), document = randomTokenIds(nd, 11 * k + 2);
        const want = await llamaRank(file, query, document);
        const got = await rerank(ranker.base, { query, documents: [document] });
        const where = `${arch} pair ${k} (${nq} + ${nd} tokens)`;
        assert.equal(got.results.length, 1);
        assert.equal(got.usage.total_tokens, (await rankingInput(file, query, document)).length, `${where}: its input`);
        const score = got.results[0].relevance_score;
        assert.ok(score > 0 && score < 1, `${where}: a probability, got ${score}`);
        worst = Math.max(worst, Math.abs(score - want));
        assert.ok(Math.abs(score - want) <= TOL, `${where}: ${score} against llama.cpp's ${want}`);
        scores.push(score);
        ctx.check();
      }
      assert.ok(new Set(scores).size === scores.length, `${arch}: the scores differ by pair: ${scores}`);
      ctx.note(`${arch}: ${PAIRS.length} pairs within ${worst.toExponential(1)} of llama.cpp`);
      if (arch === 'qwen3') {
        server = ranker;
        break;
      }
      await assertNoLeaks(ranker.base, { model: `${arch}-rank`, label: arch });
      await ranker.stop();
    }
    const file = path.join(dir, 'qwen3-rank.gguf');
    const model = 'qwen3-rank';
    // A batch of documents: each scored as alone, bit for bit; sorted by score, top_n, documents' text.
    const query = randomTokenIds(8, 50);
    const documents = [5, 17, 60, 2, 33].map((n, k) => randomTokenIds(n, 60 + k));
    const alone = [];
    for (const d of documents) alone.push((await rerank(server.base, { query, documents: [d] })).results[0].relevance_score);
    const all = await rerank(server.base, { model, query, documents });
    assert.match(all.id, /^rerank-/);
    assert.equal(all.model, model);
    assert.deepEqual(Object.keys(all), ['id', 'model', 'usage', 'results']);
    assert.deepEqual(all.results.map((r) => r.index).sort(), [0, 1, 2, 3, 4]);
    for (const r of all.results) {
      assert.equal(r.relevance_score, alone[r.index], `document ${r.index} in a batch`);
      assert.deepEqual(Object.keys(r), ['index', 'document', 'relevance_score']);
      assert.equal(typeof r.document.text, 'string');
    }
    const sorted = [...alone].sort((a, b) => b - a);
    assert.deepEqual(all.results.map((r) => r.relevance_score), sorted, 'by score, descending');
    const top = await rerank(server.base, { query, documents, top_n: 2, return_documents: false }, '/rerank');
    assert.deepEqual(top.results, all.results.slice(0, 2).map(({ index, relevance_score }) => ({ index, relevance_score })));
    assert.equal(top.usage.total_tokens, all.usage.total_tokens, 'top_n cuts the results, not the work');
    const texts = await rerank(server.base, { query: 'Once upon a time', documents: ['a cat', 'the big dog'] });
    assert.deepEqual(texts.results.map((r) => r.document.text).sort(), ['a cat', 'the big dog']);
    ctx.check();

    // /v1/score: one text_1 against every text_2, and pairwise; the same scores as /v1/rerank's.
    const one = (await post(server.base, '/v1/score', { model, text_1: query, text_2: documents })).json;
    assert.match(one.id, /^score-/);
    assert.equal(one.object, 'list');
    assert.equal(typeof one.created, 'number');
    assert.deepEqual(one.data, alone.map((score, index) => ({ index, object: 'score', score })));
    assert.deepEqual(one.usage, { prompt_tokens: all.usage.total_tokens, total_tokens: all.usage.total_tokens,
                                  completion_tokens: 0 });
    const pairwise = (await post(server.base, '/v1/score', { text_1: [query, query], text_2: documents.slice(0, 2) })).json;
    assert.deepEqual(pairwise.data.map((d) => d.score), alone.slice(0, 2));
    const single = (await post(server.base, '/v1/score', { text_1: 'Once upon a time', text_2: 'a cat' })).json;
    assert.equal(single.data.length, 1);
    ctx.check();

    // truncate_prompt_tokens: Hugging Face tokenizers' own longest-first truncation (a WordLevel tokenizer whose
    // words are the ids, cutting from the left as vLLM's tokenizers do, to the budget beside the special tokens)
    // picks each text's tokens, and Parley's score must be the score of exactly those tokens, bit for bit.
    const { Tokenizer } = await import('tokenizers');
    const words = (ids) => ids.map((i) => `t${i}`).join(' ');
    const vocab = Object.fromEntries(Array.from({ length: VOCAB }, (_, i) => [`t${i}`, i]));
    const hf = Tokenizer.fromString(JSON.stringify({
      version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null, post_processor: null,
      decoder: null, pre_tokenizer: { type: 'WhitespaceSplit' }, model: { type: 'WordLevel', vocab, unk_token: 't0' },
    }));
    // [query, document, budget beside the special tokens]: the odd budgets give a tie's odd token to the document.
    for (const [k, [nq, nd, budget]] of [[8, 40, 17], [30, 30, 19], [25, 3, 12], [6, 6, 7], [5, 5, 37]].entries()) {
      const q = randomTokenIds(nq, 90 + k), d = randomTokenIds(nd, 95 + k);
      const special = (await rerank(server.base, { query: q, documents: [d] })).usage.total_tokens - nq - nd;
      const keep = budget + special;
      hf.setTruncation(budget, { strategy: 'LongestFirst', direction: 'left' });
      const enc = await hf.encode(words(q), words(d));
      const ids = enc.getIds(), types = enc.getTypeIds();
      const hfQuery = ids.filter((_, i) => types[i] === 0), hfDocument = ids.filter((_, i) => types[i] === 1);
      const cut = await rerank(server.base, { query: q, documents: [d], truncate_prompt_tokens: keep });
      const exact = await rerank(server.base, { query: hfQuery, documents: [hfDocument] });
      const where = `truncate_prompt_tokens ${keep} on ${nq} + ${nd} tokens`;
      assert.equal(cut.usage.total_tokens, Math.min(keep, nq + nd + special), where);
      assert.equal(cut.usage.total_tokens, hfQuery.length + hfDocument.length + special, where);
      assert.equal(cut.results[0].relevance_score, exact.results[0].relevance_score, `${where}: Hugging Face's cut`);
      const scored = (await post(server.base, '/v1/score', { text_1: q, text_2: d, truncate_prompt_tokens: keep })).json;
      assert.equal(scored.data[0].score, exact.results[0].relevance_score, `${where} on /v1/score`);
    }
    ctx.check();

    const bad = [
      ['/v1/rerank', { query: 'x' }, 'documents', /required/],
      ['/v1/rerank', { query: 'x', documents: [] }, 'documents', /cannot be empty/],
      ['/v1/rerank', { query: '', documents: ['a'] }, 'query', /cannot be empty/],
      ['/v1/rerank', { documents: ['a'] }, 'query', /required/],
      ['/v1/rerank', { query: 'x', documents: 'a' }, 'documents', /array/],
      ['/v1/rerank', { query: 'x', documents: ['a', randomTokenIds(600, 1)] }, 'documents.1', /maximum context length/],
      ['/v1/rerank', { query: 'x', documents: [[1, 100000]] }, 'documents.0', /Token id 100000 is out of vocabulary/],
      ['/v1/rerank', { query: 'x', documents: ['a'], top_n: -1 }, 'top_n', /top_n/],
      ['/v1/rerank', { query: 'x', documents: ['a'], truncate_prompt_tokens: 0 }, 'truncate_prompt_tokens', /positive/],
      ['/v1/score', { text_1: 'x', text_2: 'a', truncate_prompt_tokens: 2 }, 'truncate_prompt_tokens', /no room/],
      ['/v1/rerank', { query: 'x', documents: ['a'], model: 'other' }, null, /other/],
      ['/v1/score', { text_1: ['a', 'b', 'c'], text_2: ['a', 'b'] }, 'text_1', /pairwise/],
      ['/v1/score', { text_1: 'a' }, 'text_2', /required/],
    ];
    for (const [route, body, param, message] of bad) {
      const r = await post(server.base, route, body);
      const e = assertErrorShape(r, body.model ? 404 : 400, `${route} ${JSON.stringify(body).slice(0, 80)}`);
      if (param) assert.equal(e.param, param);
      assert.match(e.message, message);
      ctx.check();
    }
    const generation = assertErrorShape(await post(server.base, '/v1/completions', { prompt: 'x', max_tokens: 2 }), 400,
                                        'a completion on a reranking server');
    assert.match(generation.message, /reranks \(--task rerank\)/);
    assertErrorShape(await post(server.base, '/v1/embeddings', { input: 'x' }), 400, 'embeddings on a reranker');
    await assertNoLeaks(server.base, { model, label: model });
    await server.stop();

    // The same file with --task generate: /v1/rerank and /v1/score are a 400 naming --task rerank.
    const generating = await ctx.start(['--task', 'generate'], { label: 'generate', model: file });
    for (const [route, body] of [['/v1/rerank', { query: 'x', documents: ['a'] }], ['/v1/score', { text_1: 'a', text_2: 'b' }]]) {
      const refused = assertErrorShape(await post(generating.base, route, body), 400, `${route} on a generating server`);
      assert.match(refused.message, /--task rerank/);
    }
    await assertNoLeaks(generating.base, { model, label: 'generate' });
    ctx.check();
  } finally {
    await disposeLlamaOracle();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
