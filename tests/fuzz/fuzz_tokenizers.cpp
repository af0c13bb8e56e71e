// Both tokenizers on arbitrary bytes: the first byte picks the vocabulary (tok512's SentencePiece-style BPE, or a
// byte-level BPE under one of five pre-tokenizers), the rest is the text. Every id is in the vocabulary, every id
// decodes, and byte-level BPE gives every byte back (but Qwen2's, which normalizes to NFC first).
#include <cstddef>
#include <cstdint>
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

const std::vector<Tokenizer>& tokenizers() {
  static const std::vector<Tokenizer> all = [] {
    std::vector<Tokenizer> t;
    t.emplace_back(read_llama2c_tokenizer(std::string(PARLEY_SHARED_DIR) + "/models/tok512.bin", 512));
    for (const char* pre : kPres) t.push_back(byte_level(pre));
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
  const bool byte_level = which > 0, normalizes = which > 0 && std::string(kPres[which - 1]) == "qwen2";
  if (byte_level && !normalizes && back != text) __builtin_trap();
  return 0;
}
