// Byte-level BPE on hand-built vocabularies: merge ranks, ignore_merges, special tokens, the
// end-of-generation set, GGUF round trips and refusals, and 10,000 mangled inputs. The real Llama 3
// and Qwen3 vocabularies are checked against Hugging Face and llama.cpp in tests/e2e/tokenizers.mjs.
#include <catch2/catch.hpp>

#include <random>

#include "model/convert.hpp"
#include "model/model_file.hpp"
#include "model/pretokenizer.hpp"
#include "model/random_model.hpp"
#include "model/tokenizer.hpp"
#include "tests/byte_level_vocab.hpp"
#include "tests/test_support.hpp"

using namespace parley;
using namespace parley::test;

namespace {

int id_of(const Tokenizer& t, const std::string& piece) {
  for (int i = 0; i < t.vocab().size(); ++i)
    if (t.vocab().pieces[i] == piece) return i;
  FAIL("no piece " << piece);
  return -1;
}

}  // namespace

TEST_CASE("GPT-2's byte map spells space as Ġ, newline as Ċ and keeps printable bytes", "[bpe]") {
  CHECK(ByteLevelBpe::byte_level_spelling(" hi\n") == "\xC4\xA0hi\xC4\x8A");
  CHECK(ByteLevelBpe::piece_bytes("\xC4\xA0hi\xC4\x8A") == " hi\n");
  std::string all;
  for (int b = 0; b < 256; ++b) all += char(b);
  CHECK(ByteLevelBpe::piece_bytes(ByteLevelBpe::byte_level_spelling(all)) == all);
}

TEST_CASE("merges apply lowest rank first, whatever their position", "[bpe]") {
  // "abc": with "b c" ranked before "a b", b and c merge first.
  const Tokenizer bc_first(byte_level_vocab({"b c", "a b"}));
  CHECK(bc_first.encode("abc", false) == std::vector<int>{'a', 256});
  const Tokenizer ab_first(byte_level_vocab({"a b", "b c"}));
  CHECK(ab_first.encode("abc", false) == std::vector<int>{256, 'c'});
  // Equal pairs merge leftmost first: "aaa" -> [aa, a].
  const Tokenizer aa(byte_level_vocab({"a a"}));
  CHECK(aa.encode("aaa", false) == std::vector<int>{256, 'a'});
  CHECK(aa.encode("aaaa", false) == std::vector<int>{256, 256});
}

TEST_CASE("the pre-tokenizer splits words so merges never cross them", "[bpe]") {
  const Tokenizer tok(byte_level_vocab({"\xC4\xA0 w", "\xC4\xA0w o", "o r", "d !"}));
  // gpt-2: " wor" and "d" and "!" ... "d!" is not one word (letters then punctuation), so "d !" never merges.
  const auto ids = tok.encode(" word!", false);
  CHECK(tok.decode(ids) == " word!");
  CHECK(std::find(ids.begin(), ids.end(), id_of(tok, "d!")) == ids.end());
  CHECK(ids.front() == id_of(tok, "\xC4\xA0wo"));
}

TEST_CASE("Llama 3's ignore_merges makes a word that is a token that token", "[bpe]") {
  // "abc" is a token no merge path reaches ("a b" exists, "ab c" does not).
  const std::vector<std::pair<std::string, TokenType>> extra = {{"abc", TokenType::Normal}};
  const Tokenizer llama3(byte_level_vocab({"a b"}, "llama-bpe", extra));
  CHECK(llama3.encode("abc", false) == std::vector<int>{257});
  const Tokenizer gpt2(byte_level_vocab({"a b"}, "gpt-2", extra));
  CHECK(gpt2.encode("abc", false) == std::vector<int>{256, 'c'});
}

TEST_CASE("special tokens are cut out leftmost-longest and decode to their text only when asked", "[bpe]") {
  // Ids: 256 is the merge "x y"; the special tokens follow.
  const Tokenizer tok(byte_level_vocab(
      {"x y"}, "llama-bpe",
      {{"<|im_start|>", TokenType::Control}, {"<|im", TokenType::Control}, {"<think>", TokenType::UserDefined}}));
  CHECK(tok.encode("<|im_start|>x<think>", false) == std::vector<int>{257, 'x', 259});
  CHECK(tok.encode("<|imxy", false) == std::vector<int>{258, 256});
  CHECK(tok.encode("<|i", false) == std::vector<int>{'<', '|', 'i'});
  CHECK(tok.decode({257, 'x', 259}) == "x<think>");
  CHECK(tok.decode({257, 'x', 259}, -1, true) == "<|im_start|>x<think>");
}

TEST_CASE("end of generation: EOS, EOT, EOM and the control tokens llama.cpp knows by their text", "[bpe]") {
  Vocab v = byte_level_vocab({"x y"}, "llama-bpe",
                             {{"<|end_of_text|>", TokenType::Control},
                              {"<|eot_id|>", TokenType::Control},
                              {"<|im_end|>", TokenType::Control},
                              {"<|eom_id|>", TokenType::Control},
                              {"<|im_end|>x", TokenType::Control},
                              {"<|eot_id|>", TokenType::Normal}});
  v.eos_id = 257;
  const Tokenizer tok(v);
  CHECK(tok.end_of_generation() == std::vector<int>{257, 258, 259, 260});
  CHECK(tok.is_end_of_generation(259));
  CHECK_FALSE(tok.is_end_of_generation(261));
  v.eot_id = 'a';
  CHECK(Tokenizer(v).end_of_generation() == std::vector<int>{'a', 257, 258, 259, 260});
}

TEST_CASE("broken byte-level vocabularies are refused naming the problem", "[bpe]") {
  CHECK_THROWS_WITH(Tokenizer(byte_level_vocab({}, "no-such-pre")),
                    Catch::Contains("unknown pre-tokenizer type 'no-such-pre'") && Catch::Contains("llama-bpe"));
  Vocab no_merges = byte_level_vocab({});
  no_merges.merges.clear();
  CHECK_THROWS_WITH(Tokenizer(no_merges), Catch::Contains("has no merges"));
  Vocab bad = byte_level_vocab({"a b"});
  bad.merges.push_back("ab");
  CHECK_THROWS_WITH(Tokenizer(bad), Catch::Contains("tokenizer.ggml.merges[1] = 'ab' is not two pieces"));
  bad.merges.back() = "a zz";
  CHECK_THROWS_WITH(Tokenizer(bad), Catch::Contains("'zz' is not a token of the vocabulary"));
}

TEST_CASE("a byte-level GGUF keeps merges, pre type and special ids, and a broken one is refused on load",
          "[bpe][gguf]") {
  TempDir tmp;
  Vocab v = byte_level_vocab({"a b", "\xC4\xA0 ab"}, "qwen2", {{"<|im_end|>", TokenType::Control}});
  v.eos_id = 258;
  v.eot_id = 258;
  LlamaConfig cfg = builtin_model_config();
  cfg.vocab_size = v.size();
  auto write = [&](const Vocab& vocab) {
    ModelFile m = make_random_model(cfg, 3, false, vocab);
    m.chat_template = "{{ messages[0].content }}";
    write_model_gguf(m, tmp / "bpe.gguf", GgmlType::F32);
    return tmp / "bpe.gguf";
  };
  const ModelFile loaded = load_model_file(write(v));
  REQUIRE(loaded.vocab);
  CHECK(loaded.vocab->kind == TokenizerKind::Gpt2Bpe);
  CHECK(loaded.vocab->merges == v.merges);
  CHECK(loaded.vocab->pre == "qwen2");
  CHECK(loaded.vocab->eot_id == 258);
  CHECK(loaded.vocab->bos_id == -1);
  CHECK(loaded.chat_template == "{{ messages[0].content }}");
  CHECK(Tokenizer(*loaded.vocab).encode(" ab<|im_end|>", false) == std::vector<int>{257, 258});

  Vocab unknown = v;
  unknown.pre = "mystery-pre";
  CHECK_THROWS_WITH(load_model_file(write(unknown)), Catch::Contains("unknown pre-tokenizer type 'mystery-pre'"));
  Vocab merge_less = v;
  merge_less.merges.clear();
  CHECK_THROWS_WITH(load_model_file(write(merge_less)), Catch::Contains("needs tokenizer.ggml.merges"));
}

TEST_CASE("Qwen2's pre-tokenizer normalizes to NFC first", "[bpe]") {
  const PreTokenizer qwen("qwen2"), llama("llama-bpe");
  std::string joined;
  for (const auto& w : qwen.split("cafe\xCC\x81")) joined += w;
  CHECK(joined == "caf\xC3\xA9");
  joined.clear();
  for (const auto& w : llama.split("cafe\xCC\x81")) joined += w;
  CHECK(joined == "cafe\xCC\x81");
}

TEST_CASE("10,000 mangled inputs never crash a tokenizer, and byte-level BPE gives every byte back", "[bpe][fuzz]") {
  const Tokenizer bpe(byte_level_vocab({"\xC4\xA0 t", "h e", "\xC4\xA0t he", "e r", "\xC4\xA0 x"}, "llama-bpe",
                                       {{"<|im_start|>", TokenType::Control}}));
  const Tokenizer qwen(byte_level_vocab({"a b"}, "qwen2"));
  const Tokenizer spm(read_llama2c_tokenizer(shared_model("tok512.bin"), 512));
  const std::string seeds[] = {"Hello world, it's 12345!", "你好 🤗 \xF0\x9F\x98", "<|im_start|>user\n\t x",
                               "  \n\n  trailing   ", "e\xCC\x81\xCC\x81\xCC\x81"};
  std::mt19937 rng(7);
  for (int i = 0; i < 10000; ++i) {
    std::string s = seeds[i % 5];
    for (int k = 0, edits = 1 + int(rng() % 6); k < edits; ++k) {
      const size_t at = s.empty() ? 0 : rng() % s.size();
      switch (rng() % 3) {
        case 0:
          s.insert(s.begin() + at, char(rng() % 256));
          break;
        case 1:
          if (!s.empty()) s.erase(at, 1);
          break;
        default:
          s.insert(at, s.substr(at, rng() % 8));
          break;
      }
    }
    const std::vector<int> ids = bpe.encode(s, false);
    REQUIRE(bpe.decode(ids, -1, true) == s);
    for (int id : qwen.encode(s, false)) REQUIRE((id >= 0 && id < qwen.vocab().size()));
    for (int id : spm.encode(s, true)) REQUIRE((id >= 0 && id < spm.vocab().size()));
  }
}
