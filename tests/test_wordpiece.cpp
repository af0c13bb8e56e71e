// WordPiece (GGUF "bert") on a hand-built vocabulary: BERT's normalizer and pre-tokenizer rule by rule, the greedy
// longest match, [CLS] ... [SEP], decoding as llama.cpp, GGUF round trips and the tokenizer.json import. A real
// vocabulary (bert-base-uncased's) is checked against Hugging Face in tests/e2e/wordpiece.mjs.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/convert.hpp"
#include "model/hf_tokenizer.hpp"
#include "model/model_file.hpp"
#include "model/random_model.hpp"
#include "model/tokenizer.hpp"
#include "model/wordpiece.hpp"
#include "tests/model_test_util.hpp"
#include "tests/test_support.hpp"

using namespace parley;
using parley::test::TempDir;
using Words = std::vector<std::string>;

namespace {

constexpr BertNormalizerOptions kUncased{true, true};
constexpr BertNormalizerOptions kCased{false, false};

// [PAD] [UNK] [CLS] [SEP] [MASK], then pieces in llama.cpp's spelling ("▁" starts a word).
Vocab bert_vocab() {
  Vocab v;
  v.kind = TokenizerKind::WordPiece;
  for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    v.pieces.push_back(special);
    v.types.push_back(TokenType::Control);
  }
  for (const char* piece : {"\u2581play", "\u2581p", "ing", "ed", "\u2581un", "play", "able", "\u2581x", "x",
                            "\u2581cafe", "\u2581,", "\u2581\u4E2D"}) {
    v.pieces.push_back(piece);
    v.types.push_back(TokenType::Normal);
  }
  v.scores.assign(v.pieces.size(), 0.0f);
  v.unk_id = 1;
  v.bos_id = 2;
  v.sep_id = v.eos_id = 3;
  v.add_bos = v.add_sep = true;
  v.add_eos = v.add_space_prefix = false;
  return v;
}

int id_of(const Vocab& v, const std::string& piece) {
  for (int i = 0; i < v.size(); ++i)
    if (v.pieces[i] == piece) return i;
  FAIL("no piece " << piece);
  return -1;
}

}  // namespace

TEST_CASE("BERT's normalizer lowercases and strips accents of an uncased vocabulary and nothing of a cased one",
          "[wordpiece]") {
  CHECK(bert_words("Hello WORLD", kUncased) == Words{"hello", "world"});
  CHECK(bert_words("na\u00EFve Caf\u00E9 cafe\u0301", kUncased) == Words{"naive", "cafe", "cafe"});
  CHECK(bert_words("Caf\u00E9", kCased) == Words{"Caf\u00E9"});
  CHECK(bert_words("Caf\u00E9", BertNormalizerOptions{false, true}) == Words{"Cafe"});
  // Only nonspacing marks go: a Devanagari vowel sign (Mc) and an enclosing keycap (Me) stay.
  CHECK(bert_words("\u0915\u0940 1\uFE0F\u20E3", kUncased) == Words{"\u0915\u0940", "1\u20E3"});
  // İ lowercases to i and a combining dot, which only accent stripping removes.
  CHECK(bert_words("\u0130", BertNormalizerOptions{true, false}) == Words{"i\u0307"});
  CHECK(bert_words("\u0130", kUncased) == Words{"i"});
}

TEST_CASE("BERT's normalizer drops control and format characters, NUL, U+FFFD and invalid bytes", "[wordpiece]") {
  CHECK(bert_words(std::string("a\x01"
                               "b\0c",
                               5),
                   kUncased) == Words{"abc"});
  CHECK(bert_words("a\u200Bb\u00ADc\uFFFDd\u007Fe", kUncased) == Words{"abcde"});
  CHECK(bert_words("a\xFF"
                   "b",
                   kUncased) == Words{"ab"});
  CHECK(bert_words("a\u0085b", kUncased) == Words{"ab"});  // NEL is a control character before it is a space
  CHECK(bert_words("", kUncased).empty());
  CHECK(bert_words(" \t\n\u200B ", kUncased).empty());
}

TEST_CASE("BERT's pre-tokenizer splits on whitespace and isolates punctuation, ASCII symbols and CJK ideographs",
          "[wordpiece]") {
  CHECK(bert_words("a\tb\nc\r\nd\u3000e\u00A0f\u2028g", kCased) == Words{"a", "b", "c", "d", "e", "f", "g"});
  CHECK(bert_words("don't stop!!", kCased) == Words{"don", "'", "t", "stop", "!", "!"});
  CHECK(bert_words("a$b+c^d`e|f", kCased) == Words{"a", "$", "b", "+", "c", "^", "d", "`", "e", "|", "f"});
  CHECK(bert_words("a\u00BFb\u2014c", kCased) == Words{"a", "\u00BF", "b", "\u2014", "c"});
  CHECK(bert_words("a\u20ACb", kCased) == Words{"a\u20ACb"});  // a symbol outside ASCII is part of the word
  CHECK(bert_words("\u4E2D\u6587abc\u3072\u3089", kCased) == Words{"\u4E2D", "\u6587", "abc\u3072\u3089"});
  CHECK(bert_words("x\U00020000y", kCased) == Words{"x", "\U00020000", "y"});
}

TEST_CASE("WordPiece takes the longest piece first and continues a word with its bare pieces", "[wordpiece]") {
  const Vocab v = bert_vocab();
  const Tokenizer t(v);
  CHECK(t.encode("playing", false) == std::vector<int>{id_of(v, "\u2581play"), id_of(v, "ing")});
  CHECK(t.encode("unplayable played", false) == std::vector<int>{id_of(v, "\u2581un"), id_of(v, "play"),
                                                                 id_of(v, "able"), id_of(v, "\u2581play"),
                                                                 id_of(v, "ed")});
  CHECK(t.encode("Caf\u00E9, \u4E2D", false) ==
        std::vector<int>{id_of(v, "\u2581cafe"), id_of(v, "\u2581,"), id_of(v, "\u2581\u4E2D")});
  CHECK(t.encode("", false).empty());
}

TEST_CASE("a word with a part no piece spells, or of more than 100 characters, is one [UNK]", "[wordpiece]") {
  const Vocab v = bert_vocab();
  const Tokenizer t(v);
  CHECK(t.encode("playz play", false) == std::vector<int>{1, id_of(v, "\u2581play")});
  CHECK(t.encode("ing", false) == std::vector<int>{1});       // a continuation piece never starts a word
  CHECK(t.encode("x\u2581x", false) == std::vector<int>{1});  // nor does a first piece continue one
  const std::vector<int> hundred = t.encode(std::string(100, 'x'), false);
  REQUIRE(hundred.size() == 100);
  CHECK(hundred[0] == id_of(v, "\u2581x"));
  CHECK(hundred[99] == id_of(v, "x"));
  CHECK(t.encode(std::string(101, 'x'), false) == std::vector<int>{1});
}

TEST_CASE("WordPiece with add_special wraps the text in [CLS] and [SEP], and special tokens in text are matched",
          "[wordpiece]") {
  const Vocab v = bert_vocab();
  const Tokenizer t(v);
  const int play = id_of(v, "\u2581play");
  CHECK(t.encode("play", true) == std::vector<int>{2, play, 3});
  CHECK(t.encode("", true) == std::vector<int>{2, 3});
  CHECK(t.encode("play[SEP]play [MASK]", false) == std::vector<int>{play, 3, play, 4});
}

TEST_CASE("WordPiece decodes as llama.cpp: a word's first piece after a space, control tokens to nothing",
          "[wordpiece]") {
  const Vocab v = bert_vocab();
  const Tokenizer t(v);
  CHECK(t.decode(t.encode("playing unplayable", true)) == " playing unplayable");
  CHECK(t.decode({2, id_of(v, "\u2581play"), 3}, -1, true) == "[CLS] play[SEP]");
  CHECK(t.token_bytes(2, id_of(v, "\u2581play")) == " play");  // no space dropped after [CLS]
}

TEST_CASE("a bert GGUF keeps pieces, [SEP] and the normalizer, and llama.cpp's defaults fill missing keys",
          "[wordpiece][gguf]") {
  TempDir tmp;
  Vocab v = bert_vocab();
  v.lowercase = false;
  v.strip_accents = true;
  LlamaConfig cfg = builtin_model_config();
  cfg.vocab_size = v.size();
  const std::string path = tmp / "bert.gguf";
  write_model_gguf(make_random_model(cfg, 3, false, v), path, GgmlType::F32);
  const ModelFile loaded = load_model_file(path);
  REQUIRE(loaded.vocab);
  CHECK(loaded.vocab->kind == TokenizerKind::WordPiece);
  CHECK(loaded.vocab->pieces == v.pieces);
  CHECK(loaded.vocab->sep_id == 3);
  CHECK(loaded.vocab->add_sep);
  CHECK(!loaded.vocab->lowercase);
  CHECK(loaded.vocab->strip_accents);
  CHECK(Tokenizer(*loaded.vocab).encode("Caf\u00E9", true) == std::vector<int>{2, 1, 3});  // "Cafe" is no piece

  // Without the normalizer keys a vocabulary is uncased; without strip_accents it follows lowercase.
  const std::string bare = tmp / "bare.gguf";
  parley_test::rewrite(path, bare, [](GgufWriter& w) {
    w.remove("tokenizer.ggml.normalizer.lowercase");
    w.remove("tokenizer.ggml.normalizer.strip_accents");
  });
  const std::optional<Vocab> defaults = load_gguf_vocab(bare);
  REQUIRE(defaults);
  CHECK(defaults->lowercase);
  CHECK(defaults->strip_accents);
  CHECK(Tokenizer(*defaults).encode("Caf\u00E9", true) == std::vector<int>{2, id_of(v, "\u2581cafe"), 3});

  const std::string no_sep = tmp / "no_sep.gguf";
  parley_test::rewrite(path, no_sep, [](GgufWriter& w) { w.remove("tokenizer.ggml.seperator_token_id"); });
  CHECK_THROWS_WITH(load_gguf_vocab(no_sep), Catch::Contains("needs a [SEP] token"));  // 102 is past this vocab
}

TEST_CASE("a WordPiece tokenizer.json imports in llama.cpp's spelling, and a normalizer it cannot run is refused",
          "[wordpiece][hf]") {
  TempDir tmp;
  auto write = [&](const std::string& normalizer) {
    std::ofstream(tmp / "tokenizer.json") << R"({"added_tokens": [{"id": 0, "content": "[UNK]", "special": true},
               {"id": 1, "content": "[CLS]", "special": true}, {"id": 2, "content": "[SEP]", "special": true}],
             "normalizer": )" << normalizer
                                          << R"(, "pre_tokenizer": {"type": "BertPreTokenizer"},
             "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                       "max_input_chars_per_word": 100,
                       "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "play": 3, "##ing": 4}}})";
    std::ofstream(tmp / "tokenizer_config.json") << R"({"cls_token": "[CLS]", "sep_token": "[SEP]"})";
  };
  write(R"({"type": "BertNormalizer", "lowercase": true, "strip_accents": null})");
  const Vocab v = import_hf_tokenizer(tmp.dir).vocab;
  CHECK(v.kind == TokenizerKind::WordPiece);
  CHECK(v.pieces == std::vector<std::string>{"[UNK]", "[CLS]", "[SEP]", "\u2581play", "ing"});
  CHECK(v.types[0] == TokenType::Control);
  CHECK(v.unk_id == 0);
  CHECK(v.bos_id == 1);
  CHECK(v.sep_id == 2);
  CHECK(v.strip_accents);
  CHECK(Tokenizer(v).encode("PLAYING", true) == std::vector<int>{1, 3, 4, 2});

  std::filesystem::remove(tmp / "tokenizer.json");  // BERT's vocab.txt: the same vocabulary, uncased by default
  std::ofstream(tmp / "vocab.txt") << "[UNK]\n[CLS]\n[SEP]\nplay\r\n##ing\n";
  std::ofstream(tmp / "tokenizer_config.json") << R"({"strip_accents": false})";
  const Vocab from_txt = import_hf_tokenizer(tmp.dir).vocab;
  CHECK(from_txt.pieces == v.pieces);
  CHECK(from_txt.types == v.types);
  CHECK((from_txt.unk_id == 0 && from_txt.bos_id == 1 && from_txt.sep_id == 2));
  CHECK((from_txt.lowercase && !from_txt.strip_accents));

  write(R"({"type": "BertNormalizer", "clean_text": false})");
  CHECK_THROWS_WITH(import_hf_tokenizer(tmp.dir), Catch::Contains("cleans the text"));
}
