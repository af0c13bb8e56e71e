// --reasoning-parser qwen3 on a live server: a chat output forced by a regex into "<think>...</think>answer" comes
// back with the thinking in reasoning_content (and vLLM's newer `reasoning`) and the answer in content, the
// markers in neither; streamed, the reasoning deltas and the content deltas add up to the same two strings; a
// completion keeps the raw text; without the flag, the markers stay in content.
//   node tests/e2e/reasoning.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { main, post, stream } from './lib.mjs';

const CHAT = '/v1/chat/completions';
const forced = (extra = {}) => ({
  messages: [{ role: 'user', content: 'Think, then answer.' }],
  max_tokens: 60,
  temperature: 0,
  structured_outputs: { regex: '<think>[a-z ]{4,12}</think>Yes[.]' },
  ...extra,
});

main('reasoning', async (_parley, ctx) => {
  const server = await ctx.start(['--reasoning-parser', 'qwen3']);
  const r = await post(server.base, CHAT, forced());
  assert.equal(r.status, 200, r.text.slice(0, 300));
  const m = r.json.choices[0].message;
  assert.match(m.reasoning_content, /^[a-z ]{4,12}$/, `reasoning_content: ${JSON.stringify(m)}`);
  assert.equal(m.reasoning, m.reasoning_content);
  assert.equal(m.content, 'Yes.');
  ctx.check();

  const s = await stream(server.base, CHAT, forced());
  assert.equal(s.status, 200);
  let reasoning = '', content = '';
  for (const chunk of s.chunks)
    for (const c of chunk.choices ?? []) {
      reasoning += c.delta?.reasoning_content ?? '';
      content += c.delta?.content ?? '';
      if (c.delta?.reasoning_content !== undefined) assert.equal(c.delta.reasoning, c.delta.reasoning_content);
    }
  assert.equal(reasoning, m.reasoning_content, 'the streamed reasoning equals the non-streamed');
  assert.equal(content, m.content, 'the streamed content equals the non-streamed');
  assert.ok(!content.includes('think') && !reasoning.includes('<'), 'no marker reaches a client');
  ctx.check();

  const completion = await post(server.base, '/v1/completions',
    { prompt: 'Hi', max_tokens: 40, temperature: 0, structured_outputs: { regex: '<think>ab</think>c' } });
  assert.equal(completion.json.choices[0].text, '<think>ab</think>c', 'completions are raw text');
  await server.stop();

  const plain = await ctx.start([]);
  const raw = await post(plain.base, CHAT, forced());
  assert.match(raw.json.choices[0].message.content, /^<think>[a-z ]{4,12}<\/think>Yes\.$/);
  assert.equal(raw.json.choices[0].message.reasoning_content, undefined);
  ctx.check();
});
