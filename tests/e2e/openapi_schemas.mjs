// Validators for the response schemas of OpenAI's own OpenAPI document (../shared/openai-openapi.yaml, OpenAPI
// 3.1), compiled as JSON Schema 2020-12 by ajv. The document's leftover OpenAPI 3.0 `nullable: true` marks read
// as "or null"; the gaps of the specification that OpenAI's own API shows are tolerated by name (GAPS).
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import YAML from 'yaml';
import { MODELS_DIR } from './lib.mjs';

export const SPEC_PATH = process.env.PARLEY_OPENAPI_SPEC ?? path.resolve(MODELS_DIR, '..', 'openai-openapi.yaml');
const ID = 'openai-openapi.yaml';

// {..., nullable: true} -> {anyOf: [{...}, {type: 'null'}]}: an enum or a $ref beside it stays intact.
export function nullableToNull(node) {
  if (Array.isArray(node)) return node.map(nullableToNull);
  if (node === null || typeof node !== 'object') return node;
  const { nullable, ...rest } = node;
  const out = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, nullableToNull(v)]));
  return nullable === true ? { anyOf: [out, { type: 'null' }] } : out;
}

const orNull = (schema) => ({ anyOf: [schema, { type: 'null' }] });

// The specification's gaps, each a behaviour of OpenAI's own API, tolerated here and nowhere else:
export const GAPS = {
  // 1. A streamed completion's chunks before the last carry finish_reason null (the specification uses
  //    CreateCompletionResponse, whose finish_reason is not nullable, for the stream too).
  streamedFinishReasonNull: 'finish_reason null on a streamed completion chunk before the last',
  // 2. With echo and logprobs the echoed prompt's first token has no logprob: token_logprobs[0] and
  //    top_logprobs[0] are null (OpenAI's legacy API and vLLM send null; the schema says number and object).
  echoFirstTokenNull: 'null token_logprobs[0] and top_logprobs[0] for the echoed prompt\'s first token',
};

// CreateCompletionResponse with the gaps above: `streamed` adds the first, echo's nulls (first item only) always.
function completionSchema(base, streamed) {
  const s = structuredClone(base);
  const choice = s.properties.choices.items;
  if (streamed) choice.properties.finish_reason = orNull(choice.properties.finish_reason);
  const logprobs = choice.properties.logprobs.anyOf.find((b) => b.type === 'object');
  for (const key of ['token_logprobs', 'top_logprobs']) {
    const array = logprobs.properties[key];
    array.prefixItems = [orNull(structuredClone(array.items))];
  }
  return s;
}

/**
 * Loads the document and returns {validate(name, value) -> errors[] (empty when it conforms), names}.
 * Names: the document's schema names, plus CompletionResponse (non-streamed, gap 2) and CompletionStreamChunk
 * (gaps 1 and 2).
 */
export function loadSchemas(specPath = SPEC_PATH) {
  const doc = YAML.parse(fs.readFileSync(specPath, 'utf8'));
  const schemas = nullableToNull(doc.components.schemas);
  schemas.CompletionResponse = completionSchema(schemas.CreateCompletionResponse, false);
  schemas.CompletionStreamChunk = completionSchema(schemas.CreateCompletionResponse, true);
  // strict off: the document carries OpenAPI's own keywords (x-oaiMeta, discriminator, example, ...).
  const ajv = new Ajv2020({ strict: false, allErrors: true, verbose: true });
  addFormats(ajv);
  ajv.addFormat('unixtime', { type: 'number', validate: Number.isInteger });
  ajv.addSchema({ $id: ID, components: { schemas } });
  const compiled = new Map();
  const where = new WeakMap();  // each schema object -> its pointer (e.g. ChatCompletionResponseMessage/required)
  const index = (node, pointer) => {
    if (node === null || typeof node !== 'object') return;
    where.set(node, pointer);
    for (const [k, v] of Object.entries(node)) index(v, `${pointer}/${k}`);
  };
  for (const [name, schema] of Object.entries(schemas)) index(schema, name);
  return {
    names: Object.keys(schemas),
    // The schema path of an error, from the document's schema that holds the failing keyword.
    schemaPath: (e) => (where.has(e.parentSchema) ? `${where.get(e.parentSchema)}/${e.keyword}` : e.schemaPath),
    validate(name, value) {
      if (!compiled.has(name)) {
        const v = ajv.getSchema(`${ID}#/components/schemas/${name}`);
        if (!v) throw new Error(`no schema ${name} in ${specPath}`);
        compiled.set(name, v);
      }
      const v = compiled.get(name);
      return v(value) ? [] : v.errors;
    },
  };
}

/** One line per error: where in the value, what failed, and the schema path that failed it. */
export function describeErrors(schemas, errors, limit = 8) {
  const lines = errors.slice(0, limit).map((e) => {
    const params = e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : '';
    return `  at ${e.instancePath || '/'}: ${e.message}${params} (schema ${schemas.schemaPath(e)})`;
  });
  if (errors.length > limit) lines.push(`  ... ${errors.length - limit} more`);
  return lines.join('\n');
}
