// The official `openai` npm client against `parley serve --api-key ...` (the official clients
// must just work): completions and chat, streamed and not, seeded streams equal to non-streamed output,
// stream_options.include_usage, echo with logprobs and prompt_logprobs (teacher forcing scores a continuation as
// it was generated), /v1/models, and 401 for a wrong key.
//   node tests/e2e/openai_client.mjs <path-to-parley>
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { main, MODEL_NAME, assertNoLeaks, get, assertErrorShape } from './lib.mjs';

const API_KEY = 'e2e-secret-key';

main('openai_client', async (parley, t) => {
  const server = await t.start(['--api-key', API_KEY]);
  const client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: API_KEY, maxRetries: 0, timeout: 30000 });

  // /v1/models lists the served model under the file's stem.
  const models = await client.models.list();
  const ids = models.data.map((m) => m.id);
  assert.ok(ids.includes(MODEL_NAME), `models.list() should include ${MODEL_NAME}, got ${JSON.stringify(ids)}`);
  t.check();

  // Greedy completion: non-empty text, OpenAI's shape.
  const greedy = await client.completions.create({ model: MODEL_NAME, prompt: 'Once upon a time', max_tokens: 32, temperature: 0 });
  assert.equal(greedy.object, 'text_completion');
  assert.equal(greedy.model, MODEL_NAME);
  assert.equal(greedy.choices.length, 1);
  assert.ok(greedy.choices[0].text.length > 0, `greedy completion text is empty: ${JSON.stringify(greedy)}`);
  assert.ok(['stop', 'length'].includes(greedy.choices[0].finish_reason), `finish_reason: ${greedy.choices[0].finish_reason}`);
  assert.ok(greedy.usage.prompt_tokens > 0 && greedy.usage.completion_tokens > 0 && greedy.usage.completion_tokens <= 32,
            `usage: ${JSON.stringify(greedy.usage)}`);
  assert.equal(greedy.usage.total_tokens, greedy.usage.prompt_tokens + greedy.usage.completion_tokens);
  t.check();

  // Greedy is deterministic across calls and equal to its stream.
  const greedy2 = await client.completions.create({ model: MODEL_NAME, prompt: 'Once upon a time', max_tokens: 32, temperature: 0 });
  assert.equal(greedy2.choices[0].text, greedy.choices[0].text, 'two greedy completions differ');
  let greedyStreamed = '';
  for await (const chunk of await client.completions.create({ model: MODEL_NAME, prompt: 'Once upon a time', max_tokens: 32, temperature: 0, stream: true })) {
    greedyStreamed += chunk.choices[0]?.text ?? '';
  }
  assert.equal(greedyStreamed, greedy.choices[0].text, 'streamed greedy completion differs from the non-streamed one');
  t.check();

  // Seeded sampling: the streamed text equals the non-streamed text; include_usage gives the same usage.
  const seeded = { model: MODEL_NAME, prompt: 'The little dog', temperature: 0.8, seed: 42, max_tokens: 40 };
  const whole = await client.completions.create(seeded);
  const wholeAgain = await client.completions.create(seeded);
  assert.equal(wholeAgain.choices[0].text, whole.choices[0].text, 'the same seeded completion twice gave different texts');
  let streamed = '';
  let usage = null;
  let finish = null;
  let chunks = 0;
  for await (const chunk of await client.completions.create({ ...seeded, stream: true, stream_options: { include_usage: true } })) {
    chunks += 1;
    if (chunk.usage) {
      assert.equal(chunk.choices.length, 0, `the usage chunk carries no choices: ${JSON.stringify(chunk)}`);
      assert.equal(usage, null, 'two usage chunks');
      usage = chunk.usage;
      continue;
    }
    assert.equal(usage, null, 'a chunk after the usage chunk');
    assert.equal(chunk.object, 'text_completion');
    assert.equal(chunk.choices.length, 1);
    streamed += chunk.choices[0].text;
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.ok(chunks > 2, `expected several chunks, got ${chunks}`);
  assert.equal(streamed, whole.choices[0].text, 'seeded completion: streamed text differs from non-streamed text');
  assert.equal(finish, whole.choices[0].finish_reason, 'seeded completion: finish_reason differs');
  assert.ok(usage, 'stream_options.include_usage: no usage chunk');
  assert.equal(usage.prompt_tokens, whole.usage.prompt_tokens, 'streamed usage.prompt_tokens');
  assert.equal(usage.completion_tokens, whole.usage.completion_tokens, 'streamed usage.completion_tokens');
  assert.equal(usage.total_tokens, whole.usage.total_tokens, 'streamed usage.total_tokens');
  t.check();

  // Without include_usage no chunk carries usage.
  for await (const chunk of await client.completions.create({ ...seeded, stream: true })) {
    assert.ok(chunk.usage == null, `usage present without include_usage: ${JSON.stringify(chunk)}`);
  }
  t.check();

  // Parallel sampling: choice i of n=2 with seed 42 equals n=1 with seed 42 + i.
  const pair = await client.completions.create({ ...seeded, n: 2 });
  assert.equal(pair.choices.length, 2);
  const byIndex = [...pair.choices].sort((a, b) => a.index - b.index);
  assert.equal(byIndex[0].text, whole.choices[0].text, 'n=2 choice 0 differs from n=1 with the same seed');
  const seed43 = await client.completions.create({ ...seeded, seed: 43 });
  assert.equal(byIndex[1].text, seed43.choices[0].text, 'n=2 choice 1 differs from n=1 with seed + 1');
  assert.equal(pair.usage.prompt_tokens, whole.usage.prompt_tokens, 'n=2 counts the prompt once');
  t.check();

  // Chat, non-streamed and streamed, seeded.
  const chat = {
    model: MODEL_NAME,
    messages: [{ role: 'user', content: 'Tell me a story about a cat.' }],
    temperature: 0.8, seed: 42, max_tokens: 40,
  };
  const chatWhole = await client.chat.completions.create(chat);
  assert.equal(chatWhole.object, 'chat.completion');
  assert.equal(chatWhole.choices.length, 1);
  assert.equal(chatWhole.choices[0].message.role, 'assistant');
  assert.equal(typeof chatWhole.choices[0].message.content, 'string');
  assert.ok(chatWhole.usage.prompt_tokens > 0 && chatWhole.usage.completion_tokens > 0, `chat usage: ${JSON.stringify(chatWhole.usage)}`);
  let chatStreamed = '';
  let chatUsage = null;
  let role = null;
  let chatFinish = null;
  for await (const chunk of await client.chat.completions.create({ ...chat, stream: true, stream_options: { include_usage: true } })) {
    if (chunk.usage) {
      assert.equal(chunk.choices.length, 0, 'the chat usage chunk carries no choices');
      chatUsage = chunk.usage;
      continue;
    }
    assert.equal(chunk.object, 'chat.completion.chunk');
    const d = chunk.choices[0].delta;
    if (d.role) role = d.role;
    chatStreamed += d.content ?? '';
    if (chunk.choices[0].finish_reason) chatFinish = chunk.choices[0].finish_reason;
  }
  assert.equal(role, 'assistant', 'the chat stream never said role=assistant');
  assert.equal(chatStreamed, chatWhole.choices[0].message.content, 'seeded chat: streamed content differs from non-streamed content');
  assert.equal(chatFinish, chatWhole.choices[0].finish_reason, 'seeded chat: finish_reason differs');
  assert.ok(chatUsage, 'chat stream_options.include_usage: no usage chunk');
  assert.equal(chatUsage.prompt_tokens, chatWhole.usage.prompt_tokens, 'chat streamed usage.prompt_tokens');
  assert.equal(chatUsage.completion_tokens, chatWhole.usage.completion_tokens, 'chat streamed usage.completion_tokens');
  t.check();

  // Echo with logprobs (OpenAI's prompt scoring): the prompt's tokens lead the logprobs, the first with nulls,
  // offsets from the echoed prompt's start. vLLM's prompt_logprobs (an extra body field) scores the same tokens.
  const prompt = 'Once upon a time';
  const scoring = { model: MODEL_NAME, prompt, max_tokens: 8, temperature: 0, echo: true, logprobs: 2 };
  const echoed = await client.completions.create({ ...scoring, prompt_logprobs: 2 });
  const elp = echoed.choices[0].logprobs;
  const numPrompt = echoed.usage.prompt_tokens;
  assert.ok(echoed.choices[0].text.startsWith(prompt), `echo: ${JSON.stringify(echoed.choices[0].text)}`);
  assert.equal(elp.tokens.length, numPrompt + echoed.usage.completion_tokens);
  assert.equal(elp.token_logprobs[0], null);
  assert.equal(elp.top_logprobs[0], null);
  assert.equal(elp.text_offset[0], 0);
  assert.equal(elp.text_offset[numPrompt], prompt.length, 'the generated tokens start where the echoed prompt ends');
  assert.equal(elp.tokens.slice(numPrompt).join(''), echoed.choices[0].text.slice(prompt.length));
  const pl = echoed.choices[0].prompt_logprobs;
  assert.equal(pl.length, numPrompt);
  assert.equal(pl[0], null);
  for (let i = 1; i < numPrompt; i++) {
    const entries = Object.values(pl[i]);
    const own = entries.find((e) => e.decoded_token === elp.tokens[i]);
    assert.ok(own && own.rank >= 1 && entries.length <= 3, `prompt_logprobs[${i}]: ${JSON.stringify(pl[i])}`);
    assert.equal(own.logprob, elp.token_logprobs[i], `prompt token ${i}: prompt_logprobs and echoed logprobs differ`);
    assert.ok(Object.keys(elp.top_logprobs[i]).includes(elp.tokens[i]));
  }
  t.check();

  // Teacher forcing: the greedy continuation, sent back as prompt, is scored as generation scored it.
  const generated = await client.completions.create({ ...scoring, echo: false });
  const glp = generated.choices[0].logprobs;
  const forced = await client.completions.create({ ...scoring, prompt: prompt + generated.choices[0].text, max_tokens: 1 });
  const flp = forced.choices[0].logprobs;
  const from = forced.usage.prompt_tokens - glp.tokens.length;
  assert.deepEqual(flp.tokens.slice(from, from + glp.tokens.length), glp.tokens, 'the continuation tokenizes as generated');
  assert.deepEqual(flp.token_logprobs.slice(from, from + glp.tokens.length), glp.token_logprobs);
  assert.deepEqual(flp.top_logprobs.slice(from, from + glp.tokens.length), glp.top_logprobs);
  t.check();

  // Streamed: the first chunk carries the echoed prompt with its logprobs and prompt_logprobs; the rest add up.
  let first = null;
  let text = '';
  const streamedTokens = [];
  for await (const chunk of await client.completions.create({ ...scoring, prompt_logprobs: 2, stream: true })) {
    const c = chunk.choices[0];
    if (!first) first = c;
    else assert.equal(c.prompt_logprobs, undefined, 'prompt_logprobs after the first chunk');
    text += c.text;
    streamedTokens.push(...(c.logprobs?.tokens ?? []));
  }
  assert.deepEqual(first.prompt_logprobs, pl, 'the stream\'s prompt_logprobs differ');
  assert.equal(text, echoed.choices[0].text);
  assert.deepEqual(streamedTokens, elp.tokens);
  t.check();

  // A wrong key: the client raises AuthenticationError (401); no key at all: 401 in OpenAI's error shape.
  const wrong = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'not-the-key', maxRetries: 0 });
  await assert.rejects(() => wrong.completions.create({ model: MODEL_NAME, prompt: 'hi', max_tokens: 4 }), (e) => {
    assert.ok(e instanceof OpenAI.AuthenticationError, `expected AuthenticationError, got ${e?.constructor?.name}: ${e?.message}`);
    assert.equal(e.status, 401);
    return true;
  });
  await assert.rejects(() => wrong.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  assertErrorShape(await get(server.base, '/v1/models'), 401, 'GET /v1/models without a key');
  // /health stays open without the key.
  assert.equal((await get(server.base, '/health')).status, 200, '/health must not need the key');
  t.check();

  await assertNoLeaks(server.base);
  t.check();
});
