// Parallel sampling with a delayed split: choice i of an n-sample request equals an n = 1
// request seeded seed + i (streamed and not, alone and under load); the prompt is prefilled once; the
// stream carries one choice per chunk and exactly n finish reasons; aborting mid-stream frees every
// block; a small pool that preempts children changes nothing.
//   node tests/e2e/parallel_sampling.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { main, complete, stream, post, settle, metricValue, assertNoLeaks, randomTokenIds } from './lib.mjs';

const BODY = { prompt: 'Once upon a time', temperature: 0.8, top_p: 0.9, max_tokens: 48, seed: 21 };

async function singles(base, body, n) {
  return Promise.all(Array.from({ length: n }, (_, i) => complete(base, { ...body, n: 1, seed: body.seed + i })));
}

async function checkChoices(t, base, label) {
  const want = await singles(base, BODY, 4);
  const got = await complete(base, { ...BODY, n: 4 });
  assert.equal(got.choices.length, 4);
  got.choices.forEach((c, i) => {
    assert.equal(c.index, i, `${label}: choices ordered by index`);
    assert.equal(c.text, want[i].choices[0].text, `${label}: choice ${i} differs from n = 1 with seed ${BODY.seed + i}`);
  });
  assert.equal(got.usage.prompt_tokens, want[0].usage.prompt_tokens, `${label}: usage counts the prompt once`);
  assert.equal(got.usage.completion_tokens, want.reduce((a, w) => a + w.usage.completion_tokens, 0));
  const s = await stream(base, '/v1/completions', { ...BODY, n: 4, stream_options: { include_usage: true } });
  assert.equal(s.status, 200);
  for (const chunk of s.chunks.slice(0, -1)) assert.equal(chunk.choices.length, 1, `${label}: one choice per chunk`);
  const last = s.chunks.at(-1);
  assert.deepEqual(last.choices, [], `${label}: the usage chunk has no choices`);
  assert.deepEqual(last.usage, got.usage, `${label}: streamed usage`);
  assert.deepEqual(Object.keys(s.finishReasons).map(Number).sort(), [0, 1, 2, 3], `${label}: one finish_reason per choice`);
  assert.equal(s.chunks.filter((c) => c.choices[0]?.finish_reason).length, 4, `${label}: exactly n finish reasons`);
  for (let i = 0; i < 4; ++i) assert.equal(s.texts[i], want[i].choices[0].text, `${label}: streamed choice ${i}`);
  assert.ok(s.done);
  t.check();
}

main('parallel_sampling', async (parley, t) => {
  const server = await t.start(['--admin-token', 'adm']);
  const base = server.base;

  // The admin view shows an n = 4 request's children, each with its own blocks, as one user request.
  let view;
  const viewed = await stream(base, '/v1/completions', { prompt: 'Once', n: 4, temperature: 0.9, max_tokens: 300, ignore_eos: true, seed: 2 }, {
    onChunk: async (_, count) => {
      if (count === 8) view = fetch(base + '/admin/requests', { headers: { Authorization: 'Bearer adm' } }).then((r) => r.json());
    },
  });
  assert.equal(Object.keys(viewed.finishReasons).length, 4);
  const v = await view;
  const children = v.requests.filter((r) => r.user_request === v.requests[0]?.user_request);
  assert.equal(children.length, 4, `admin view: ${JSON.stringify(v)}`);
  for (const c of children) assert.ok(c.blocks.length >= 1 && c.state === 'running', `admin view child: ${JSON.stringify(c)}`);
  assert.ok(v.kv_blocks.used > 0 && v.kv_blocks.total > 0);
  t.check();
  await checkChoices(t, base, 'alone');

  // Under load: the same request among 12 other streams.
  const load = Array.from({ length: 12 }, (_, i) =>
    stream(base, '/v1/completions', { prompt: `The dog ${i}`, max_tokens: 80, ignore_eos: true, seed: i, n: 1 + (i % 3) }));
  await checkChoices(t, base, 'under load');
  await Promise.all(load);
  await assertNoLeaks(base);

  // Chat: one role chunk per choice, and choice i equals n = 1 with seed + i.
  const chat = { messages: [{ role: 'user', content: 'Tell me a story.' }], temperature: 0.8, max_tokens: 24, seed: 3 };
  const cs = await stream(base, '/v1/chat/completions', { ...chat, n: 3 });
  const roles = cs.chunks.filter((c) => c.choices[0]?.delta?.role === 'assistant').map((c) => c.choices[0].index);
  assert.deepEqual(roles.sort(), [0, 1, 2], 'chat: one role chunk per choice');
  for (let i = 0; i < 3; ++i) {
    const one = await post(base, '/v1/chat/completions', { ...chat, seed: 3 + i });
    assert.equal(cs.texts[i], one.json.choices[0].message.content, `chat choice ${i}`);
  }
  t.check();

  // One prefill: n = 8 on a 300-token prompt computes 300 prompt tokens, not 8 x 300.
  const before = metricValue(await settle(base), 'parley:prefill_tokens_computed_total');
  const splits0 = metricValue(await settle(base), 'parley:parallel_sampling_splits_total');
  await complete(base, { prompt: randomTokenIds(300, 77), n: 8, temperature: 0.8, max_tokens: 16, seed: 1 });
  const after = await settle(base);
  assert.equal(metricValue(after, 'parley:prefill_tokens_computed_total') - before, 300, 'n = 8 prefills its prompt once');
  assert.equal(metricValue(after, 'parley:parallel_sampling_splits_total') - splits0, 1);
  t.check();

  // Abort mid-stream: every child aborts and every block returns.
  const ctl = new AbortController();
  const aborted = await stream(base, '/v1/completions', { prompt: 'Once', n: 8, temperature: 0.9, max_tokens: 400, ignore_eos: true, seed: 9 },
    { signal: ctl.signal, onChunk: (_, count) => (count === 12 ? (ctl.abort(), 'abort') : undefined) }).catch((e) => ({ thrown: e.name }));
  assert.ok(aborted.thrown === 'AbortError' || aborted.chunks?.length >= 12);
  await assertNoLeaks(base, { label: 'after aborting n = 8 mid-stream' });
  t.check();

  // A pool too small for 8 children at once preempts some and changes no choice.
  const small = await t.start(['--num-kv-blocks', '12', '--max-num-batched-tokens', '64'], { label: 'small pool' });
  const body = { prompt: randomTokenIds(40, 5), n: 8, temperature: 0.8, max_tokens: 60, ignore_eos: true, seed: 100 };
  const big = await complete(base, body);
  const tight = await complete(small.base, body);
  tight.choices.forEach((c, i) => assert.equal(c.text, big.choices[i].text, `small pool: choice ${i}`));
  const m = await settle(small.base);
  assert.ok(metricValue(m, 'parley:num_preemptions_total') > 0, 'the small pool never preempted');
  await assertNoLeaks(small.base, { label: 'small pool' });
  t.check();
});
