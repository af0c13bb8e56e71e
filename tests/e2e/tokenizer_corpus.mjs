// A seeded corpus for tokenizer checks: prose, code, numbers, whitespace and newline runs, CJK, Arabic,
// Devanagari, emoji sequences, decomposed accents, and text that spells special tokens. Shared by the
// tokenizer test (tests/e2e/tokenizers.mjs) and its benchmark (bench/bench_tokenize.mjs).
import { prng } from '../../bench/serve/prng.mjs';

const FRAGMENTS = {
  prose: [
    'Once upon a time, there was a little girl named Lily.', "It's what they'd've wanted, isn't it?",
    "I'LL BE THERE. You'RE late, we've MISSED it.", 'The quick brown fox jumps over the lazy dog.',
    'Dr. Smith (née Jones) paid $3.50 for 2 coffees & a croissant.', 'Well... maybe—or maybe not!',
    'He said: "Don\'t." She replied, \'Why not?\'', 'e-mail: someone@example.com, https://example.org/a?b=c#d',
    'Ünïcödé façade, naïve café, Straße, øre, Ærø, ĳ ligature', 'Привет, как дела? Всё хорошо.',
    'Γειά σου Κόσμε', 'Şişli, İstanbul — ıi İI', 'Tiếng Việt có dấu: người, được, những.',
  ],
  code: [
    'def f(x):\n    return x ** 2  # square\n', 'for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}',
    '{"key": [1, 2.5, null, true], "nested": {"a": "b"}}', '#include <stdio.h>\nint main(void) { return 0; }',
    'const re = /^\\s+|\\s+$/g; // trim', 'SELECT id, name FROM users WHERE age >= 21 ORDER BY name;',
    '<div class="x">&nbsp;&lt;tag&gt;</div>', '$ ls -la /usr/bin | grep -E "^l" > out.txt 2>&1',
    'fn main() -> Result<(), Box<dyn Error>> { Ok(()) }', '    indented\n        more\n            deeper',
  ],
  numbers: [
    '1', '12', '123', '1234', '12345', '1234567890', '3.14159265358979', '-42', '+7', '1e10', '6.022e23',
    '2024-01-31', '12:30:45', '(555) 123-4567', '1,000,000', '0x1F', '٣٤٥', '१२३', '①②③', '½ ¾ ²³',
  ],
  whitespace: [
    ' ', '  ', '   ', '    ', '\t', '\t\t', '\n', '\n\n', '\n\n\n', '\r\n', ' \n ', '\n \n', '  \n\n  ',
    ' \t \n', '\u00a0', '\u3000', '\u2003', '\u200b', ' x ', 'a  b', 'a   b', 'a\tb', 'end   ', '   start',
  ],
  cjk: [
    '你好，世界！', '我爱自然语言处理。', '東京は日本の首都です。', 'ひらがな カタカナ 漢字', '안녕하세요 세계',
    '中文English混合text', '「引用」と『二重』', '数字123和字母abc', '龘靐齉爩', '𠀀𠀁𪚥',
  ],
  arabic: ['مرحبا بالعالم', 'اللغة العربية جميلة.', 'سلام عليكم ١٢٣', 'فارسی: سلام دنیا'],
  devanagari: ['नमस्ते दुनिया', 'हिन्दी भाषा बहुत सुंदर है।', 'क्षत्रिय ज्ञान श्री', 'संस्कृतम्'],
  emoji: [
    '🤗', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇯🇵🇺🇸', '1️⃣', '❤️', '🧑🏻‍💻', '😀😃😄😁', 'a🙂b', '✨🎉 done',
  ],
  combining: ['e\u0301', 'cafe\u0301', 'A\u030a', 'n\u0303o', '\u1100\u1161\u11a8', 'o\u0308\u0301', 'ﬁ ﬂ', 'Å Å'],
};

// Special-token spellings of the Llama 3 and Qwen families, whole and broken.
const SPECIALS = [
  '<|begin_of_text|>', '<|end_of_text|>', '<|eot_id|>', '<|start_header_id|>', '<|end_header_id|>',
  '<|im_start|>', '<|im_end|>', '<|endoftext|>', '<think>', '</think>', '<tool_call>', '<|reserved_special_token_5|>',
  '<|im_', '|>', '<|eot_id|', '<|', '<<|im_end|>>', '<s>', '</s>', '<|im_start|>user\nHi<|im_end|>',
];

const KINDS = Object.keys(FRAGMENTS);

function pick(rand, list) { return list[Math.floor(rand() * list.length)]; }

// A random code point from a mix of blocks (letters, marks, symbols, rare planes).
function randomCodePoint(rand) {
  const blocks = [[0x20, 0x7e], [0xa0, 0x24f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x6ff], [0x900, 0x97f],
                  [0xe00, 0xe7f], [0x2000, 0x206f], [0x2190, 0x23ff], [0x3040, 0x30ff], [0x4e00, 0x9fff],
                  [0xac00, 0xd7a3], [0x1f300, 0x1faff], [0x20000, 0x2a6df], [0x300, 0x36f]];
  const [lo, hi] = pick(rand, blocks);
  return String.fromCodePoint(lo + Math.floor(rand() * (hi - lo + 1)));
}

/** `count` strings from a fixed seed: every fragment alone, then random mixes of 1..6 pieces. */
export function tokenizerCorpus(count = 5000, seed = 20261201) {
  const rand = prng(seed);
  const out = [];
  for (const kind of KINDS) out.push(...FRAGMENTS[kind]);
  out.push(...SPECIALS);
  const separators = ['', ' ', '  ', '\n', '\n\n', '\t', ', ', '. ', ' \n', '\r\n'];
  while (out.length < count) {
    const n = 1 + Math.floor(rand() * 6);
    let s = '';
    for (let i = 0; i < n; ++i) {
      const r = rand();
      if (r < 0.08) s += pick(rand, SPECIALS);
      else if (r < 0.16) for (let k = 1 + Math.floor(rand() * 8); k > 0; --k) s += randomCodePoint(rand);
      else s += pick(rand, FRAGMENTS[pick(rand, KINDS)]);
      s += pick(rand, separators);
    }
    out.push(s);
  }
  return out.filter((s) => s.length > 0).slice(0, count);
}
