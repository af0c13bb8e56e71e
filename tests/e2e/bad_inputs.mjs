// Bad input never crashes the server and never leaks: each gets its status and an
// OpenAI-shaped error {"error": {"message", "type", "param", "code"}} with a message that names the problem;
// after each the server still answers /health, and at the end a valid request still works.
//   node tests/e2e/bad_inputs.mjs <path-to-parley>
import assert from 'node:assert/strict';
import net from 'node:net';
import WebSocket from 'ws';
import { main, MODEL_NAME, CONTEXT, post, get, stream, complete, assertErrorShape, assertNoLeaks, randomTokenIds, sleep } from './lib.mjs';

const API_KEY = 'bad-inputs-key';
const MAX_BODY = 4096;
const auth = { Authorization: `Bearer ${API_KEY}` };
const ok = { model: MODEL_NAME, prompt: 'Hello', max_tokens: 8 };

// {name, route, body (object merged over `ok`, or a raw string), status, param?, match (message regex),
//  code? (OpenAI's string error.code; null when absent)}
const CASES = [
  { name: 'max_tokens 0', body: { max_tokens: 0 }, status: 400, param: 'max_tokens', match: /max_tokens/ },
  { name: 'max_tokens -1', body: { max_tokens: -1 }, status: 400, param: 'max_tokens', match: /max_tokens/ },
  { name: 'temperature -1', body: { temperature: -1 }, status: 400, param: 'temperature', match: /temperature/ },
  { name: 'top_p 0', body: { top_p: 0 }, status: 400, param: 'top_p', match: /top_p/ },
  { name: 'top_p 1.5', body: { top_p: 1.5 }, status: 400, param: 'top_p', match: /top_p/ },
  { name: 'top_k -2', body: { top_k: -2 }, status: 400, param: 'top_k', match: /top_k/ },
  { name: 'min_p 2', body: { min_p: 2 }, status: 400, param: 'min_p', match: /min_p/ },
  { name: 'presence_penalty 3', body: { presence_penalty: 3 }, status: 400, param: 'presence_penalty', match: /presence_penalty/ },
  { name: 'frequency_penalty -3', body: { frequency_penalty: -3 }, status: 400, param: 'frequency_penalty', match: /frequency_penalty/ },
  { name: 'repetition_penalty 0', body: { repetition_penalty: 0 }, status: 400, param: 'repetition_penalty', match: /repetition_penalty/ },
  { name: 'logprobs 21', body: { logprobs: 21 }, status: 400, param: 'logprobs', match: /logprobs|20/ },
  { name: 'n 0', body: { n: 0 }, status: 400, param: 'n', match: /\bn\b/ },
  { name: 'n 2 with temperature 0', body: { n: 2, temperature: 0 }, status: 400, match: /greedy|\bn\b/ },
  { name: 'unknown token id', body: { prompt: [[999999]] }, status: 400, param: 'prompt', match: /999999|vocab/i },
  { name: 'negative token id', body: { prompt: [-1, 5] }, status: 400, param: 'prompt', match: /-1|vocab/i },
  { name: 'prompt over the context', body: { prompt: randomTokenIds(600, 7), max_tokens: 16 }, status: 400, match: new RegExp(`${CONTEXT}|context`) },
  { name: 'prompt + max_tokens over the context', body: { prompt: randomTokenIds(500, 8), max_tokens: 100 }, status: 400, param: 'max_tokens', match: new RegExp(`${CONTEXT}|context`) },
  { name: 'text prompt over the context, no max_tokens', body: { prompt: 'Once upon a time there was a dog. '.repeat(60), max_tokens: undefined }, status: 400, match: /context/ },
  { name: 'empty prompt', body: { prompt: '' }, status: 400, param: 'prompt', match: /empty/i },
  { name: 'empty token list', body: { prompt: [] }, status: 400, param: 'prompt', match: /empty/i },
  { name: 'missing prompt', body: { prompt: undefined }, status: 400, match: /prompt/i },
  { name: 'malformed JSON', body: '{"model": "stories260K", "prompt": "hi", ', status: 400, match: /JSON/i },
  { name: 'body is an array', body: '[1, 2, 3]', status: 400, match: /object/i },
  { name: 'empty body', body: '', status: 400, match: /JSON|empty|body/i },
  { name: 'deeply nested JSON', body: `{"prompt": ${'['.repeat(1000)}${']'.repeat(1000)}}`, status: 400, match: /nest|deep|JSON|prompt/i },
  { name: 'temperature "hot"', body: { temperature: 'hot' }, status: 400, param: 'temperature', match: /temperature/ },
  { name: 'max_tokens 1.5', body: { max_tokens: 1.5 }, status: 400, param: 'max_tokens', match: /max_tokens/ },
  { name: 'stream "yes"', body: { stream: 'yes' }, status: 400, param: 'stream', match: /stream/ },
  { name: 'stop 42', body: { stop: 42 }, status: 400, param: 'stop', match: /stop/ },
  { name: 'logit_bias out of vocab', body: { logit_bias: { 99999: 1 } }, status: 400, param: 'logit_bias', match: /logit_bias|vocab/ },
  { name: 'stream_options without stream', body: { stream_options: { include_usage: true } }, status: 400, match: /stream/ },
  { name: 'unknown model', body: { model: 'gpt-17' }, status: 404, param: 'model', match: /gpt-17/,
    code: 'model_not_found' },
  // Chat.
  { name: 'chat: no messages', route: '/v1/chat/completions', body: { model: MODEL_NAME, max_tokens: 8 }, status: 400, match: /messages/ },
  { name: 'chat: empty messages', route: '/v1/chat/completions', body: { model: MODEL_NAME, messages: [], max_tokens: 8 }, status: 400, match: /messages/ },
  { name: 'chat: bad role', route: '/v1/chat/completions', body: { model: MODEL_NAME, messages: [{ role: 'wizard', content: 'hi' }], max_tokens: 8 }, status: 400, match: /role/ },
  { name: 'chat: content 5', route: '/v1/chat/completions', body: { model: MODEL_NAME, messages: [{ role: 'user', content: 5 }], max_tokens: 8 }, status: 400, match: /content/ },
  { name: 'chat: top_p 1.5', route: '/v1/chat/completions', body: { model: MODEL_NAME, messages: [{ role: 'user', content: 'hi' }], top_p: 1.5 }, status: 400, param: 'top_p', match: /top_p/ },
  { name: 'chat: unknown model', route: '/v1/chat/completions', body: { model: 'nope', messages: [{ role: 'user', content: 'hi' }] }, status: 404, match: /nope/,
    code: 'model_not_found' },
  // Tokenizer endpoints.
  { name: 'detokenize out of vocab', route: '/detokenize', body: { model: MODEL_NAME, tokens: [1, 99999] }, status: 400, match: /99999|vocab/i },
  { name: 'tokenize malformed', route: '/tokenize', body: '{"prompt":', status: 400, match: /JSON/i },
];

// The case's body over `ok` for /v1/completions; other routes take the body as given.
function merged(body, route) {
  if (typeof body === 'string') return body;
  const b = route ? { ...body } : { ...ok, ...body };
  for (const k of Object.keys(b)) if (b[k] === undefined) delete b[k];
  return b;
}

// Sends raw bytes on a fresh socket and returns whatever comes back before the server closes (or `ms`).
function rawExchange(port, bytes, ms = 3000) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let got = '';
    const done = () => { sock.destroy(); resolve(got); };
    const timer = setTimeout(done, ms);
    sock.on('data', (d) => { got += d.toString('latin1'); });
    sock.on('error', () => {});
    sock.on('close', () => { clearTimeout(timer); resolve(got); });
    sock.write(bytes);
  });
}

main('bad_inputs', async (parley, t) => {
  const server = await t.start(['--api-key', API_KEY, '--max-body-bytes', String(MAX_BODY)]);
  const base = server.base;
  const healthy = async (after) => {
    server.assertAlive();
    const h = await get(base, '/health');
    assert.equal(h.status, 200, `/health after "${after}": ${h.status}`);
  };

  for (const c of CASES) {
    const r = await post(base, c.route ?? '/v1/completions', merged(c.body, c.route), { headers: auth });
    const e = assertErrorShape(r, c.status, c.name);
    assert.match(e.message, c.match, `${c.name}: message does not name the problem: ${JSON.stringify(e.message)}`);
    if (c.param) assert.equal(e.param, c.param, `${c.name}: error.param: ${r.text}`);
    assert.equal(e.code, c.code ?? null, `${c.name}: error.code`);
    await healthy(c.name);
    t.check();
  }

  // The same bad inputs streamed: refused before the stream begins, with the same status.
  for (const c of CASES.filter((c) => typeof c.body === 'object' && !c.route && c.status === 400).slice(0, 8)) {
    const r = await post(base, '/v1/completions', { ...merged(c.body), stream: true }, { headers: auth });
    assertErrorShape(r, 400, `${c.name} (stream)`);
    await healthy(`${c.name} (stream)`);
    t.check();
  }

  // An unknown field is accepted, logged and counted, as vLLM accepts it; a field OpenAI defines and Parley does not
  // act on (store, metadata) is accepted silently. (--strict-request-fields' 400: tests/test_openai_protocol.cpp.)
  const lenient = await post(base, '/v1/completions', { ...ok, frobnicate: 1, store: true, metadata: { a: 'b' } },
                             { headers: auth });
  assert.equal(lenient.status, 200, `unknown field: ${lenient.text.slice(0, 200)}`);
  const counted = (await get(base, '/metrics', { headers: auth })).text.match(/^parley:request_fields_ignored_total (\S+)$/m);
  assert.equal(Number(counted?.[1]), 1, 'parley:request_fields_ignored_total counts frobnicate alone');
  t.check();

  // Over --max-body-bytes: 413.
  const big = await post(base, '/v1/completions', { ...ok, prompt: 'a'.repeat(MAX_BODY + 100) }, { headers: auth });
  const e413 = assertErrorShape(big, 413, 'body over --max-body-bytes');
  assert.match(e413.message, new RegExp(`${MAX_BODY}|large|limit`, 'i'), `413 message: ${e413.message}`);
  await healthy('413');
  t.check();

  // Authentication: none, a wrong key, a wrong scheme.
  for (const [what, headers] of [['no bearer', {}], ['wrong bearer', { Authorization: 'Bearer nope' }],
                                 ['key prefix', { Authorization: `Bearer ${API_KEY.slice(0, -1)}` }],
                                 ['key plus a byte', { Authorization: `Bearer ${API_KEY}x` }],
                                 ['basic scheme', { Authorization: `Basic ${API_KEY}` }]]) {
    const r = await post(base, '/v1/completions', ok, { headers });
    assert.equal(assertErrorShape(r, 401, `completions with ${what}`).code, 'invalid_api_key');
    await healthy(what);
    t.check();
  }
  assertErrorShape(await get(base, '/v1/models'), 401, 'models with no bearer');
  // The scheme in any case (RFC 7235); two Authorization headers are a 400, whichever of them holds the key.
  for (const scheme of ['bearer', 'BEARER']) {
    const r = await post(base, '/v1/completions', ok, { headers: { Authorization: `${scheme} ${API_KEY}` } });
    assert.equal(r.status, 200, `the scheme spelled ${scheme}: ${r.status} ${r.text.slice(0, 200)}`);
  }
  for (const second of [API_KEY, 'nope']) {
    const reply = await rawExchange(server.port, `GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${API_KEY}\r\n` +
                                                 `Authorization: Bearer ${second}\r\nConnection: close\r\n\r\n`);
    assert.match(reply, /^HTTP\/1\.1 400 /, `two Authorization headers: ${JSON.stringify(reply.slice(0, 200))}`);
    assert.match(reply, /Only one Authorization header/);
  }
  await healthy('authorization headers');
  t.check();

  // Methods and paths.
  assertErrorShape(await get(base, '/v1/completions', { headers: auth }), 405, 'GET /v1/completions');
  assertErrorShape(await get(base, '/v1/chat/completions', { headers: auth }), 405, 'GET /v1/chat/completions');
  assertErrorShape(await post(base, '/v1/models', {}, { headers: auth }), 405, 'POST /v1/models');
  assertErrorShape(await get(base, '/v1/nothing-here', { headers: auth }), 404, 'GET /v1/nothing-here');
  assertErrorShape(await get(base, '/nothing-here'), 404, 'GET /nothing-here');
  await healthy('methods and paths');
  t.check();

  // Garbage on the wire: a bad request line, a header flood over the limit, a truncated body then close.
  await rawExchange(server.port, 'THIS IS NOT HTTP\r\n\r\n');
  await healthy('garbage request line');
  await rawExchange(server.port, `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nAuthorization: Bearer ${API_KEY}\r\n\r\n{"prompt":`, 300);
  await healthy('truncated body');
  const hugeLen = await rawExchange(server.port, `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\nAuthorization: Bearer ${API_KEY}\r\n\r\n`);
  assert.match(hugeLen, /^HTTP\/1\.1 413/, `Content-Length 99999999999: expected 413, got ${JSON.stringify(hugeLen.slice(0, 200))}`);
  await healthy('huge Content-Length');
  t.check();

  // A websocket id over 256 bytes is refused (its error carries no id); one of 256 bytes runs.
  const ws = new WebSocket(`ws://127.0.0.1:${server.port}/v1/ws`, { headers: auth });
  const replies = [];
  ws.on('message', (d) => replies.push(JSON.parse(d.toString())));
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  const idOf = (n) => 'i'.repeat(n);
  for (const n of [257, 3000, 256])  // under --max-body-bytes 4096
    ws.send(JSON.stringify({ type: 'request', id: idOf(n), endpoint: 'completions', body: { ...ok, max_tokens: 4 } }));
  while (!replies.some((m) => m.type === 'final')) await sleep(10);
  const refusals = replies.filter((m) => m.type === 'error');
  assert.deepEqual(refusals.map((m) => [m.status, m.id, m.error.message]),
                   [[400, '', '"id" is 257 bytes; at most 256 are allowed.'],
                    [400, '', '"id" is 3000 bytes; at most 256 are allowed.']]);
  assert.ok(replies.filter((m) => m.type !== 'error').every((m) => m.id === idOf(256)), 'the 256-byte id runs');
  ws.close();
  await healthy('websocket ids');
  t.check();

  // Still serving: a valid request works and nothing leaked.
  const good = await complete(base, { prompt: 'Once upon a time', max_tokens: 8, temperature: 0 }, { headers: auth });
  assert.ok(good.choices[0].text.length > 0, 'valid request after the bad ones returned empty text');
  t.check();
  await assertNoLeaks(base);
  t.check();

  // A full waiting queue answers 503: one running, two waiting, the rest refused.
  const small = await t.start(['--max-num-seqs', '1', '--max-waiting', '2'], { label: 'queue-bound server' });
  const flood = { model: MODEL_NAME, prompt: 'Once', max_tokens: 200, ignore_eos: true };
  const rs = await Promise.all(Array.from({ length: 8 }, (_, i) => post(small.base, '/v1/completions', { ...flood, seed: i })));
  const statuses = rs.map((r) => r.status);
  assert.ok(statuses.filter((s) => s === 200).length >= 3, `queue of 2 + 1 running: expected >= 3 successes, got ${statuses}`);
  const refused = rs.filter((r) => r.status !== 200);
  assert.ok(refused.length > 0, `8 requests at once with --max-num-seqs 1 --max-waiting 2: none refused (${statuses})`);
  for (const r of refused) {
    const e = assertErrorShape(r, 503, 'waiting queue full');
    assert.match(e.message, /queue|overload/i, `503 message: ${e.message}`);
    assert.equal(r.headers.get('retry-after'), '1', 'a 503 says when to retry');
  }
  // Streamed: the SSE header waits for admission, so a refusal is a real 503 status, never an in-band error.
  const ss = await Promise.all(Array.from({ length: 8 }, (_, i) => stream(small.base, '/v1/completions', { ...flood, seed: i })));
  const streamRefused = ss.filter((s) => s.status !== 200 || s.errors.length > 0);
  assert.ok(streamRefused.length > 0, 'streamed flood: none refused');
  for (const s of streamRefused) assert.equal(s.status, 503, `streamed flood: status ${s.status} ${s.body} ${JSON.stringify(s.errors)}`);
  t.note(`queue full: ${refused.length}/8 refused (503); streamed: ${streamRefused.filter((s) => s.status === 503).length} with status 503, ` +
         `${streamRefused.filter((s) => s.status === 200).length} in-band`);
  await assertNoLeaks(small.base, { label: 'queue-bound server' });
  t.check();
});
