// The tokenizers on arbitrary bytes: the first byte picks the vocabulary (tok512's SentencePiece-style BPE, a
// byte-level BPE under one of five pre-tokenizers, or an uncased WordPiece), the rest is the text. Every id is in the
// vocabulary, every id decodes, and byte-level BPE gives every byte back (but Qwen2's, which normalizes to NFC first).
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "model/byte_level_bpe.hpp"
#include "model/tokenizer.hpp"
#include "tests/byte_level_vocab.hpp"

using namespace parley;

namespace {

const char* const kPres[] = {"gpt-2", "llama-bpe", "qwen2", "deepseek-v3", "gpt-4o"};

// A few merges and special tokens on the 256 byte symbols, as test_byte_level_bpe.cpp builds them.
Tokenizer byte_level(const std::string& pre) {
  return Tokenizer(test::byte_level_vocab(
      {"\xC4\xA0 t", "h e", "\xC4\xA0t he", "e r", "\xC4\xA0 x", "1 2", "12 3"}, pre,
      {{"<|im_start|>", TokenType::Control}, {"<|im", TokenType::Control}, {"<think>", TokenType::UserDefined}}));
}

// A few pieces in llama.cpp's spelling ("▁" starts a word), [UNK] [CLS] [SEP] as control tokens.
Tokenizer wordpiece() {
  Vocab v;
  v.kind = TokenizerKind::WordPiece;
  for (const char* piece : {"[UNK]", "[CLS]", "[SEP]", "\u2581a", "a", "\u2581the", "ing", "\u2581,", "\u2581\u4E2D"}) {
    v.pieces.push_back(piece);
    v.types.push_back(piece[0] == '[' ? TokenType::Control : TokenType::Normal);
  }
  v.scores.assign(v.pieces.size(), 0.0f);
  v.unk_id = 0;
  v.bos_id = 1;
  v.sep_id = v.eos_id = 2;
  v.add_bos = v.add_sep = true;
  v.add_space_prefix = false;
  return Tokenizer(v);
}

const std::vector<Tokenizer>& tokenizers() {
  static const std::vector<Tokenizer> all = [] {
    std::vector<Tokenizer> t;
    t.emplace_back(read_llama2c_tokenizer(std::string(PARLEY_SHARED_DIR) + "/models/tok512.bin", 512));
    for (const char* pre : kPres) t.push_back(byte_level(pre));
    t.push_back(wordpiece());
    return t;
  }();
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tokenizers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t which = data[0] % tokenizers().size();
  const Tokenizer& tok = tokenizers()[which];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::vector<int> ids = tok.encode(text, data[0] & 0x80);
  for (int id : ids)
    if (id < 0 || id >= tok.vocab().size()) __builtin_trap();
  const std::string back = tok.decode(ids, -1, true);
  const bool byte_level = which > 0 && which <= std::size(kPres);
  const bool normalizes = byte_level && std::string(kPres[which - 1]) == "qwen2";
  if (byte_level && !normalizes && back != text) __builtin_trap();
  return 0;
}
