// Prints llama.cpp's teacher-forced top-5 next-token logprobs for a token sequence, as JSON (timing on stderr):
//   node tests/e2e/llama_oracle_check.mjs MODEL.gguf 1,403,407,261,378
import { llamaPromptLogprobs, disposeLlamaOracle } from './llama_oracle.mjs';

const [gguf, ids] = process.argv.slice(2);
if (!gguf || !ids) {
  console.error('usage: node tests/e2e/llama_oracle_check.mjs MODEL.gguf ID,ID,...');
  process.exit(2);
}
const tokens = ids.split(',').map(Number);
const t0 = performance.now();
const positions = await llamaPromptLogprobs(gguf, tokens);
const ms = performance.now() - t0;
// A JSON array, one position per line.
console.log(`[\n${positions.map((p, i) => JSON.stringify(p && { pos: i, next: tokens[i], ...p })).join(',\n')}\n]`);
console.error(`${tokens.length} positions in ${ms.toFixed(0)} ms (model load included)`);
await disposeLlamaOracle();
