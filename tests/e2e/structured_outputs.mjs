// Structured outputs end to end on stories260K, a model whose own output is never JSON: 200 generated JSON
// Schemas sampled at temperature 1 (both endpoints, response_format and structured_outputs), every output
// parsed and validated by ajv (a JSON Schema validator nobody here wrote); regex, choice and grammar
// constraints checked with JavaScript's own RegExp; streamed equals non-streamed for seeded requests; the
// official openai client's chat.completions.parse; bad constraints answered 400 with the server still serving.
//   node tests/e2e/structured_outputs.mjs <path-to-parley>
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import OpenAI from 'openai';
import { main, MODEL_NAME, post, stream, prng, assertNoLeaks, assertErrorShape, metric } from './lib.mjs';

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);

// A random schema the tiny model can finish: strings, arrays and recursion are bounded.
function randomSchema(rand, depth = 0) {
  const pick = (xs) => xs[Math.floor(rand() * xs.length)];
  const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
  const leaves = [
    () => ({ type: 'string', maxLength: int(1, 8), ...(rand() < 0.3 ? { minLength: 1 } : {}) }),
    () => ({ type: 'string', enum: ['red', 'green', 'blue', 'a "quoted" one'].slice(0, int(1, 4)) }),
    () => { const lo = int(-1000, 1000); return { type: 'integer', minimum: lo, maximum: lo + int(0, 5000) }; },
    () => ({ type: 'integer', exclusiveMinimum: -5, maximum: int(0, 40) }),
    () => ({ type: 'number', minimum: 0, maximum: int(1, 100) }),
    () => ({ type: 'boolean' }),
    () => ({ type: 'null' }),
    () => ({ const: pick(['fixed', 7, true, null]) }),
    () => ({ type: ['integer', 'null'], minimum: 0, maximum: 99 }),
    () => ({ type: 'string', pattern: '^[a-z]{2,4}-[0-9]{2}$' }),
    () => ({ type: 'string', format: pick(['date', 'time', 'uuid', 'ipv4']) }),
    () => ({ anyOf: [{ type: 'boolean' }, { type: 'string', maxLength: 3 }] }),
  ];
  const r = rand();
  if (depth < 2 && r < 0.25) {
    const properties = {};
    const names = ['name', 'age', 'tags', 'pet', 'ok', 'when', 'x'];
    for (let i = int(1, 4); i > 0; --i) properties[pick(names) + (depth ? depth : '')] = randomSchema(rand, depth + 1);
    const keys = Object.keys(properties);
    const required = keys.filter(() => rand() < 0.6);
    return { type: 'object', properties, required, additionalProperties: false };
  }
  if (depth < 2 && r < 0.35) {
    const min = int(0, 1);
    return { type: 'array', items: randomSchema(rand, depth + 1), minItems: min, maxItems: min + int(0, 2) };
  }
  return pick(leaves)();
}

// The completion text or chat content of a non-streamed response.
const outputOf = (r) => r.json.choices[0].text ?? r.json.choices[0].message.content;

main('structured_outputs', async (_parley, ctx) => {
  const s = await ctx.start(['--max-num-seqs', '32']);
  const rand = prng(2026);

  // 1. 200 random schemas, 16 at a time, alternating endpoint and field.
  const SCHEMAS = 200;
  let done = 0;
  for (let batch = 0; batch < SCHEMAS; batch += 16) {
    await Promise.all(Array.from({ length: Math.min(16, SCHEMAS - batch) }, async (_, k) => {
      const i = batch + k;
      const schema = { type: 'object', properties: { answer: randomSchema(rand) }, required: ['answer'], additionalProperties: false };
      if (i % 2) schema.properties.more = randomSchema(rand);
      const chat = i % 4 >= 2;
      const constraint = i % 2
        ? { response_format: { type: 'json_schema', json_schema: { name: `s${i}`, strict: true, schema } } }
        : { structured_outputs: { json: schema } };
      const body = { model: MODEL_NAME, max_tokens: 400, temperature: 1, seed: i, ...constraint,
        ...(chat ? { messages: [{ role: 'user', content: 'Tell me a story.' }] } : { prompt: 'Once upon a time' }) };
      const r = await post(s.base, chat ? '/v1/chat/completions' : '/v1/completions', body);
      assert.equal(r.status, 200, `schema ${i} ${JSON.stringify(schema)}: ${r.text}`);
      const text = outputOf(r);
      assert.equal(r.json.choices[0].finish_reason, 'stop', `schema ${i}: ended by length: ${text}`);
      let value;
      assert.doesNotThrow(() => { value = JSON.parse(text); }, `schema ${i}: not JSON: ${text}`);
      const validate = ajv.compile(schema);
      assert.ok(validate(value), `schema ${i} ${JSON.stringify(schema)}\noutput ${text}\n${ajv.errorsText(validate.errors)}`);
      done += 1;
    }));
  }
  assert.equal(done, SCHEMAS);
  ctx.check();
  ctx.note(`${SCHEMAS} schemas valid`);

  // 2. Regex, choice and grammar, each checked by an independent recognizer.
  const cases = [
    { so: { regex: '[A-Z][a-z]{2,6} (is|was) [0-9]{1,3}' }, check: /^[A-Z][a-z]{2,6} (is|was) [0-9]{1,3}$/ },
    { so: { regex: '(\\d{3}-){2}\\d{4}' }, check: /^(\d{3}-){2}\d{4}$/ },
    { so: { choice: ['cat', 'dog', 'a big red ball'] }, check: /^(cat|dog|a big red ball)$/ },
    { so: { grammar: 'root ::= num (" " op " " num){1,3}\nnum ::= [1-9] [0-9]?\nop ::= "+" | "*" | "-"' },
      check: /^[1-9][0-9]?( [+*-] [1-9][0-9]?){1,3}$/ },
    { so: { json_object: true }, check: (t) => { const v = JSON.parse(t); return v !== null && typeof v === 'object' && !Array.isArray(v); },
      maxTokens: 500 },
  ];
  for (const c of cases)
    for (let seed = 0; seed < 8; ++seed) {
      const r = await post(s.base, '/v1/completions', { model: MODEL_NAME, prompt: 'The little dog', temperature: 1, seed,
        max_tokens: c.maxTokens ?? 200, structured_outputs: c.so });
      assert.equal(r.status, 200, r.text);
      const text = outputOf(r);
      if (c.so.json_object && r.json.choices[0].finish_reason === 'length') {  // any object: its strings may not close
        assert.ok(/^\{/.test(text), text);
        continue;
      }
      assert.equal(r.json.choices[0].finish_reason, 'stop', `${JSON.stringify(c.so)}: ${text}`);
      assert.ok(typeof c.check === 'function' ? c.check(text) : c.check.test(text), `${JSON.stringify(c.so)} seed ${seed}: ${text}`);
    }
  ctx.check();

  // 3. Streamed equals non-streamed, seeded, on both endpoints.
  const person = { type: 'object', properties: { name: { type: 'string', maxLength: 10 }, age: { type: 'integer', minimum: 0, maximum: 120 } },
    required: ['name', 'age'], additionalProperties: false };
  for (const chat of [false, true])
    for (let seed = 0; seed < 4; ++seed) {
      const route = chat ? '/v1/chat/completions' : '/v1/completions';
      const body = { temperature: 1, seed, max_tokens: 120, structured_outputs: { json: person },
        ...(chat ? { messages: [{ role: 'user', content: 'Who are you?' }] } : { prompt: 'Lily said' }) };
      const whole = await post(s.base, route, { model: MODEL_NAME, ...body });
      const streamed = await stream(s.base, route, body);
      assert.equal(streamed.status, 200);
      assert.equal(streamed.text, outputOf(whole), `seed ${seed} chat ${chat}`);
      assert.equal(streamed.finishReasons[0], whole.json.choices[0].finish_reason);
    }
  ctx.check();

  // 4. The official client's structured-output helper parses the content into `parsed`.
  const client = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: 'unused' });
  for (let seed = 0; seed < 3; ++seed) {
    const completion = await client.chat.completions.parse({
      model: MODEL_NAME, seed, temperature: 1, max_tokens: 150,
      messages: [{ role: 'system', content: 'Reply in JSON.' }, { role: 'user', content: 'Describe a person.' }],
      response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: person } },
    });
    const message = completion.choices[0].message;
    assert.deepEqual(message.parsed, JSON.parse(message.content));
    assert.ok(ajv.validate(person, message.parsed), message.content);
    assert.deepEqual(Object.keys(message.parsed), ['name', 'age']);  // schema order
  }
  ctx.check();

  // 5. Bad constraints: 400 naming the problem; the server keeps serving.
  const bad = [
    { so: { structured_outputs: { json: { type: 5 } } }, param: 'structured_outputs.json', match: /type/ },
    { so: { structured_outputs: { json: { type: 'integer', multipleOf: 3 } } }, param: 'structured_outputs.json', match: /multipleOf/ },
    { so: { structured_outputs: { json: { type: 'integer', minimum: 5, maximum: 3 } } }, param: 'structured_outputs.json', match: /minimum|unsatisfiable/i },
    { so: { structured_outputs: { grammar: 'root ::= ("a"' } }, param: 'structured_outputs.grammar', match: /line 1/ },
    { so: { structured_outputs: { grammar: 'root ::= root "a" | "b"' } }, param: 'structured_outputs.grammar', match: /left recursion/ },
    { so: { structured_outputs: { regex: 'a(?=b)' } }, param: 'structured_outputs.regex', match: /lookahead|look/i },
    { so: { structured_outputs: { choice: [] } }, param: 'structured_outputs.choice', match: /array/ },
    { so: { structured_outputs: { json: {}, regex: 'a' } }, match: /exactly one/ },
    { so: { structured_outputs: { xml: 'a' } }, param: 'structured_outputs.xml', match: /xml/ },
    { so: { response_format: { type: 'yaml' } }, param: 'response_format.type', match: /json_schema/ },
    { so: { response_format: { type: 'text', json_schema: { name: 'x' } } }, param: 'response_format.json_schema', match: /json_schema/ },
    { so: { response_format: { type: 'json_schema', json_schema: { schema: {} } } }, param: 'response_format.json_schema.name', match: /name/ },
    { so: { response_format: { type: 'json_object' }, structured_outputs: { regex: 'a' } }, match: /not both/ },
    { so: { response_format: { type: 'json_object' }, ignore_eos: true }, param: 'ignore_eos', match: /ignore_eos/ },
  ];
  for (const b of bad) {
    const r = await post(s.base, '/v1/completions', { model: MODEL_NAME, prompt: 'Hi', max_tokens: 8, ...b.so });
    assertErrorShape(r, 400, JSON.stringify(b.so));
    if (b.param) assert.equal(r.json.error.param, b.param, r.text);
    assert.match(r.json.error.message, b.match, r.text);
  }
  const after = await post(s.base, '/v1/completions', { model: MODEL_NAME, prompt: 'Hi', max_tokens: 20, structured_outputs: { choice: ['yes', 'no'] } });
  assert.equal(after.status, 200);
  assert.match(outputOf(after), /^(yes|no)$/);
  await assertNoLeaks(s.base, { label: 'after structured outputs' });
  ctx.check();

  // 6. Metrics: structured requests by kind, and masks applied.
  assert.ok((await metric(s.base, 'parley:structured_output_requests_total', { kind: 'json' })) >= SCHEMAS);
  assert.ok((await metric(s.base, 'parley:structured_output_requests_total', { kind: 'choice' })) >= 9);
  const masks = await metric(s.base, 'parley:structured_output_masks_total');
  const seconds = await metric(s.base, 'parley:structured_output_mask_seconds_total');
  assert.ok(masks > 1000 && seconds > 0, `${masks} masks in ${seconds} s`);
  ctx.note(`mask ${(seconds / masks * 1e6).toFixed(1)} us/token`);
  ctx.check();
});
