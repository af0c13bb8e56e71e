// Tokenizer and detokenizer against llama2.c's tok512.bin and run.c's greedy reference output.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "model/detokenizer.hpp"
#include "model/model_file.hpp"
#include "model/tokenizer.hpp"
#include "tests/test_paths.hpp"

using namespace parley;

namespace {

std::string models_dir() { return test::shared_dir() + "/models"; }
std::string tok512_path() { return models_dir() + "/tok512.bin"; }

Tokenizer tok512() { return Tokenizer(read_llama2c_tokenizer(tok512_path(), 512)); }

nlohmann::json reference() {
  std::ifstream in(models_dir() + "/stories260K_greedy_reference.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// A literal O(n^2) transcription of run.c's encode() (without BOS/EOS), as an oracle.
std::vector<int> runc_encode(const Vocab& v, const std::string& text) {
  std::map<std::string, int> ids;  // run.c's sorted vocab + bsearch: any id of a piece
  for (int i = 0; i < v.size(); ++i) ids.emplace(v.pieces[i], i);
  auto find = [&](const std::string& s) {
    auto it = ids.find(s);
    return it == ids.end() ? -1 : it->second;
  };
  std::vector<int> toks;
  if (text.empty()) return toks;
  toks.push_back(find(" "));
  for (std::size_t i = 0; i < text.size();) {
    std::size_t len = 1;
    while (len < 4 && i + len < text.size() && (text[i + len] & 0xC0) == 0x80) ++len;
    const std::string ch = text.substr(i, len);
    if (int id = find(ch); id != -1) {
      toks.push_back(id);
    } else {
      for (char c : ch) toks.push_back(static_cast<unsigned char>(c) + 3);
    }
    i += len;
  }
  while (true) {
    float best = -1e10f;
    int best_id = -1, best_idx = -1;
    for (std::size_t i = 0; i + 1 < toks.size(); ++i) {
      const int id = find(v.pieces[toks[i]] + v.pieces[toks[i + 1]]);
      if (id != -1 && v.scores[id] > best) {
        best = v.scores[id];
        best_id = id;
        best_idx = static_cast<int>(i);
      }
    }
    if (best_idx == -1) break;
    toks[best_idx] = best_id;
    toks.erase(toks.begin() + best_idx + 1);
  }
  return toks;
}

// A small hand-made vocab: no byte tokens unless added, no dummy prefix.
Vocab tiny_vocab(const std::vector<std::pair<std::string, float>>& entries) {
  Vocab v;
  v.pieces = {"<unk>", "<s>", "</s>"};
  v.scores = {0, 0, 0};
  v.types = {TokenType::Unknown, TokenType::Control, TokenType::Control};
  for (const auto& [p, s] : entries) {
    v.pieces.push_back(p);
    v.scores.push_back(s);
    v.types.push_back(TokenType::Normal);
  }
  v.add_space_prefix = false;
  return v;
}

const std::string kFffd = "\xEF\xBF\xBD";

}  // namespace

TEST_CASE("read_llama2c_tokenizer parses tok512.bin", "[tokenizer]") {
  const Vocab v = read_llama2c_tokenizer(tok512_path(), 512);
  REQUIRE(v.size() == 512);
  CHECK(v.kind == TokenizerKind::SentencePiece);
  CHECK(v.pieces[0] == "<unk>");
  CHECK(v.types[0] == TokenType::Unknown);
  CHECK(v.pieces[1] == "<s>");
  CHECK(v.types[1] == TokenType::Control);
  CHECK(v.pieces[2] == "</s>");
  CHECK(v.types[2] == TokenType::Control);
  CHECK(v.pieces[3] == "<0x00>");
  CHECK(v.types[3] == TokenType::Byte);
  CHECK(v.pieces[258] == "<0xFF>");
  CHECK(v.types[258] == TokenType::Byte);
  CHECK(v.pieces[259] == " t");
  CHECK(v.types[259] == TokenType::Normal);
  CHECK(v.pieces[261] == " a");
  CHECK(v.scores[261] == -2.0f);
  CHECK(v.pieces[410] == " ");
  CHECK(v.pieces[485] == "\xC3\xA9");
  CHECK(v.bos_id == 1);
  CHECK(v.eos_id == 2);
  CHECK(v.unk_id == 0);
  CHECK(v.add_space_prefix);
}

TEST_CASE("read_llama2c_tokenizer reports missing and short files", "[tokenizer]") {
  const std::string missing = models_dir() + "/no_such_tokenizer.bin";
  CHECK_THROWS_WITH(read_llama2c_tokenizer(missing, 512), Catch::Contains(missing));
  // Asking for more tokens than the file holds is a short read.
  CHECK_THROWS_WITH(read_llama2c_tokenizer(tok512_path(), 513),
                    Catch::Contains(tok512_path()) && Catch::Contains("truncated"));

  const auto dir = std::filesystem::temp_directory_path() / "parley_test_tokenizer";
  std::filesystem::create_directories(dir);
  const std::string cut = (dir / "tok_cut.bin").string();
  {
    std::ifstream in(tok512_path(), std::ios::binary);
    std::string head(1000, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(cut, std::ios::binary).write(head.data(), in.gcount());
  }
  CHECK_THROWS_AS(read_llama2c_tokenizer(cut, 512), std::runtime_error);
  CHECK_THROWS_WITH(read_llama2c_tokenizer(cut, 512), Catch::Contains(cut));
  std::filesystem::remove_all(dir);
}

TEST_CASE("encode reproduces run.c on the greedy reference prompts", "[tokenizer]") {
  const Tokenizer tok = tok512();
  const auto ref = reference();
  REQUIRE(ref["references"].size() >= 3);
  for (const auto& r : ref["references"]) {
    const std::string prompt = r["prompt"];
    INFO("prompt: '" << prompt << "'");
    CHECK(tok.encode(prompt, true) == r["prompt_token_ids"].get<std::vector<int>>());
  }
  CHECK(tok.encode("Once upon a time", true) == std::vector<int>{1, 403, 407, 261, 378});
  CHECK(tok.encode("", true) == std::vector<int>{1});
  CHECK(tok.encode("", false).empty());
  CHECK(tok.encode("the", false) == std::vector<int>{265});  // " the": dummy prefix merged in
}

TEST_CASE("decode reproduces run.c's printed text", "[tokenizer]") {
  const Tokenizer tok = tok512();
  const auto ref = reference();
  for (const auto& r : ref["references"]) {
    // run.c prints every token after the prompt's BOS, each decoded against its predecessor, and
    // stops (unprinted) when it samples BOS; the reference drops run.c's final newline.
    auto prompt_ids = r["prompt_token_ids"].get<std::vector<int>>();
    auto output_ids = r["output_token_ids"].get<std::vector<int>>();
    REQUIRE(prompt_ids.front() == 1);
    std::vector<int> printed(prompt_ids.begin() + 1, prompt_ids.end());
    printed.insert(printed.end(), output_ids.begin(), output_ids.end());
    if (r["stopped_on_bos"].get<bool>()) {
      REQUIRE(printed.back() == 1);
      printed.pop_back();
    }
    INFO("prompt: '" << r["prompt"].get<std::string>() << "'");
    CHECK(tok.decode(printed, 1) == r["text"].get<std::string>());
  }
}

TEST_CASE("token_bytes drops the leading space only after BOS", "[tokenizer]") {
  const Tokenizer tok = tok512();
  CHECK(tok.token_bytes(1, 403) == "Once");
  CHECK(tok.token_bytes(-1, 403) == " Once");
  CHECK(tok.token_bytes(403, 407) == " upon");
  CHECK(tok.token_bytes(1, 3 + 0x20) == " ");  // a <0x20> byte piece keeps its space (run.c)
  CHECK(tok.token_bytes(5, 13) == "\n");
  CHECK(tok.token_bytes(5, 1).empty());  // control tokens print nothing
  CHECK(tok.token_bytes(5, 2).empty());
  CHECK_THROWS_AS(tok.token_bytes(5, 512), std::out_of_range);
  CHECK(tok.decode({1, 403, 407}) == "Once upon");
}

TEST_CASE("byte fallback encodes unknown characters into byte tokens", "[tokenizer]") {
  const Tokenizer tok = tok512();
  const std::string s = "\xC3\xA9\xE4\xB8\xAD\x01";  // "é中\x01": é is a piece, 中 and \x01 are not
  const std::vector<int> ids = tok.encode(s, false);
  CHECK(ids == std::vector<int>{410, 485, 3 + 0xE4, 3 + 0xB8, 3 + 0xAD, 3 + 0x01});
  CHECK(tok.decode(ids) == " " + s);
  CHECK(tok.decode(tok.encode(s, true)) == s);
  // Stray continuation bytes and invalid bytes are grouped like run.c but still round-trip.
  const std::string junk = "a\x80\x80\xFF\xC3z";
  CHECK(tok.encode(junk, false) == runc_encode(tok.vocab(), junk));
  CHECK(tok.decode(tok.encode(junk, false)) == " " + junk);
}

TEST_CASE("byte fallback finds byte tokens by piece, not by id offset", "[tokenizer]") {
  Vocab v = tiny_vocab({{"a", -1}, {"b", -2}});
  for (int b : {0x41, 0xE4, 0xB8, 0xAD}) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    v.pieces.push_back(name);
    v.scores.push_back(0);
    v.types.push_back(TokenType::Byte);
  }
  const Tokenizer tok(v);  // ids: a=3 b=4 <0x41>=5 <0xE4>=6 <0xB8>=7 <0xAD>=8
  CHECK(tok.encode("A", false) == std::vector<int>{5});
  CHECK(tok.encode("a\xE4\xB8\xAD", false) == std::vector<int>{3, 6, 7, 8});
  CHECK(tok.decode({3, 6, 7, 8}) == "a\xE4\xB8\xAD");
  // A character without byte tokens becomes one unk.
  CHECK(tok.encode("aZb", false) == std::vector<int>{3, 0, 4});
}

TEST_CASE("merges pick the highest score, the leftmost pair on ties", "[tokenizer]") {
  {
    const Tokenizer tok(tiny_vocab({{"a", 0}, {"b", 0}, {"c", 0}, {"ab", -5}, {"bc", -1}}));
    CHECK(tok.encode("abc", false) == std::vector<int>{3, 7});  // "a" "bc": higher score wins
  }
  {
    const Tokenizer tok(tiny_vocab({{"a", 0}, {"b", 0}, {"ab", -1}, {"ba", -1}}));
    CHECK(tok.encode("aba", false) == std::vector<int>{5, 3});  // tie: the left pair "ab"
    CHECK(tok.encode("bab", false) == std::vector<int>{6, 4});  // tie: the left pair "ba"
  }
  {
    // Merged pieces merge again: a+b -> ab, ab+c -> abc.
    const Tokenizer tok(tiny_vocab({{"a", 0}, {"b", 0}, {"c", 0}, {"ab", -1}, {"abc", -2}}));
    CHECK(tok.encode("abcab", false) == std::vector<int>{7, 6});
  }
}

TEST_CASE("encode matches a literal run.c transcription on random text", "[tokenizer]") {
  const Tokenizer tok = tok512();
  const std::vector<std::string> alphabet = {" ",
                                             " ",
                                             " ",
                                             "e",
                                             "t",
                                             "a",
                                             "o",
                                             "h",
                                             "n",
                                             "L",
                                             "T",
                                             ".",
                                             ",",
                                             "\"",
                                             "'",
                                             "\n",
                                             "the",
                                             "and",
                                             "Lily",
                                             "was",
                                             "\xC3\xA9",
                                             "\xE2\x80\x9C",
                                             "\xE4\xB8\xAD",
                                             "\x01",
                                             "\xFF",
                                             "\x80",
                                             "\xF0\x9F\x98\x80",
                                             "ing",
                                             "day",
                                             "  "};
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 300; ++trial) {
    std::string s;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) s += alphabet[rng() % alphabet.size()];
    INFO("text: '" << s << "'");
    REQUIRE(tok.encode(s, false) == runc_encode(tok.vocab(), s));
    REQUIRE(tok.decode(tok.encode(s, true)) == s);
  }
}

TEST_CASE("round trip of ASCII text follows the dummy prefix", "[tokenizer]") {
  const Tokenizer tok = tok512();
  for (const std::string s :
       {"Once upon a time", "hello world", "  two leading spaces", "Tabs\tand\nnewlines!", "x", "Zebra {quux} ~`|"}) {
    INFO("text: '" << s << "'");
    CHECK(tok.decode(tok.encode(s, false)) == " " + s);
    CHECK(tok.decode(tok.encode(s, true)) == s);  // the space after BOS is dropped
  }
  Vocab v = read_llama2c_tokenizer(tok512_path(), 512);
  v.add_space_prefix = false;
  const Tokenizer no_prefix(std::move(v));
  CHECK(no_prefix.encode("the", false) == std::vector<int>{413, 260});  // "t" "he"
  CHECK(no_prefix.decode(no_prefix.encode("hello world", false)) == "hello world");
}

TEST_CASE("encode handles a 10k-character prompt", "[tokenizer]") {
  const Tokenizer tok = tok512();
  std::string s;
  while (s.size() < 12000) s += "Lily and Tom were playing in the park. \xE4\xB8\xAD They saw a box!\n";
  const auto ids = tok.encode(s, true);
  CHECK(ids.size() < s.size() / 2);
  CHECK(tok.decode(ids) == s);
  const std::string head = s.substr(0, 1500);
  CHECK(tok.encode(head, false) == runc_encode(tok.vocab(), head));
}

TEST_CASE("inconsistent vocabularies are rejected", "[tokenizer]") {
  Vocab v = tiny_vocab({{"a", 0}});
  v.scores.pop_back();
  CHECK_THROWS_AS(Tokenizer(v), std::invalid_argument);
  Vocab w = tiny_vocab({{"a", 0}});
  w.bos_id = 99;
  CHECK_THROWS_AS(Tokenizer(w), std::invalid_argument);
  Vocab x = tiny_vocab({{"<0xZZ>", 0}});
  x.types.back() = TokenType::Byte;
  CHECK_THROWS_AS(Tokenizer(x), std::invalid_argument);
}

TEST_CASE("incremental detokenizer holds back split characters", "[tokenizer]") {
  const Tokenizer tok = tok512();
  IncrementalDetokenizer d(tok, 1);
  CHECK(d.push(403) == "Once");  // space dropped after BOS
  CHECK(d.push(3 + 0xE4).empty());
  CHECK(d.push(3 + 0xB8).empty());
  CHECK(d.push(3 + 0xAD) == "\xE4\xB8\xAD");
  CHECK(d.push(407) == " upon");
  CHECK(d.flush().empty());

  IncrementalDetokenizer e(tok);
  CHECK(e.push(3 + 0xF0).empty());
  CHECK(e.push(3 + 0x9F).empty());
  CHECK(e.flush() == kFffd);  // incomplete tail at the end
}

TEST_CASE("incremental detokenizer replaces invalid bytes with U+FFFD", "[tokenizer]") {
  const Tokenizer tok = tok512();
  auto run = [&](const std::vector<int>& bytes) {
    IncrementalDetokenizer d(tok);
    std::vector<std::string> outs;
    for (int b : bytes) outs.push_back(d.push(3 + b));
    outs.push_back(d.flush());
    return outs;
  };
  using V = std::vector<std::string>;
  CHECK(run({0xFF, 0x41}) == V{kFffd, "A", ""});                      // bad lead byte, at once
  CHECK(run({0x80}) == V{kFffd, ""});                                 // stray continuation
  CHECK(run({0xE4, 0x41}) == V{"", kFffd + "A", ""});                 // bad continuation
  CHECK(run({0xC0, 0xAF}) == V{kFffd, kFffd, ""});                    // overlong
  CHECK(run({0xE0, 0x80}) == V{"", kFffd + kFffd, ""});               // overlong 3-byte
  CHECK(run({0xED, 0xA0, 0x80}) == V{"", kFffd + kFffd, kFffd, ""});  // surrogate
  CHECK(run({0xF4, 0x90}) == V{"", kFffd + kFffd, ""});               // above U+10FFFF
  CHECK(run({0xF0, 0x9F, 0x98}) == V{"", "", "", kFffd});             // incomplete at flush
  CHECK(run({0xF0, 0x9F, 0x98, 0x80}) == V{"", "", "", "\xF0\x9F\x98\x80", ""});
}

TEST_CASE("incremental detokenizer output concatenates to decode", "[tokenizer]") {
  const Tokenizer tok = tok512();
  const auto ref = reference();
  std::vector<std::vector<int>> streams;
  for (const auto& r : ref["references"]) {
    auto ids = r["prompt_token_ids"].get<std::vector<int>>();
    auto out = r["output_token_ids"].get<std::vector<int>>();
    ids.insert(ids.end(), out.begin(), out.end());
    streams.push_back(ids);
  }
  streams.push_back(tok.encode("caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80!", true));
  for (const auto& ids : streams) {
    IncrementalDetokenizer d(tok, -1);
    std::string joined;
    for (int t : ids) joined += d.push(t);
    joined += d.flush();
    CHECK(joined == tok.decode(ids, -1));
  }
}

TEST_CASE("the GGUF vocab of stories260K tokenizes like tok512.bin", "[tokenizer]") {
  const ModelFile m = load_model_file(models_dir() + "/stories260K.gguf");
  REQUIRE(m.vocab.has_value());
  const Vocab& gv = *m.vocab;
  const Vocab bv = read_llama2c_tokenizer(tok512_path(), 512);
  REQUIRE(gv.size() == bv.size());
  CHECK(gv.kind == TokenizerKind::SentencePiece);
  CHECK(gv.bos_id == bv.bos_id);
  CHECK(gv.eos_id == bv.eos_id);
  CHECK(gv.unk_id == bv.unk_id);
  CHECK(gv.add_space_prefix);
  for (int i = 0; i < bv.size(); ++i) {
    INFO("token " << i);
    CHECK(gv.pieces[i] == bv.pieces[i]);  // U+2581 mapped back to ' '
    CHECK(gv.types[i] == bv.types[i]);
  }

  const Tokenizer from_gguf(gv);
  const Tokenizer from_bin(bv);
  const auto ref = reference();
  std::vector<std::string> texts = {"caf\xC3\xA9 \xE4\xB8\xAD\x01!", "  Lily, the dog.\nTom"};
  for (const auto& r : ref["references"]) texts.push_back(r["prompt"]);
  for (const auto& t : texts) {
    INFO("text: '" << t << "'");
    CHECK(from_gguf.encode(t, true) == from_bin.encode(t, true));
  }
  for (const auto& r : ref["references"]) {
    CHECK(from_gguf.encode(r["prompt"].get<std::string>(), true) == r["prompt_token_ids"].get<std::vector<int>>());
    const auto out = r["output_token_ids"].get<std::vector<int>>();
    CHECK(from_gguf.decode(out, 1) == from_bin.decode(out, 1));
  }
}
