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

using namespace parley;

namespace {

const char* const kPres[] = {"gpt-2", "llama-bpe", "qwen2", "deepseek-v3", "gpt-4o"};

// The 256 byte symbols, a few merges (each one's token after them), and special tokens, as test_byte_level_bpe.cpp.
Tokenizer byte_level(const std::string& pre) {
  Vocab v;
  v.kind = TokenizerKind::Gpt2Bpe;
  v.pre = pre;
  v.bos_id = v.eos_id = v.unk_id = -1;
  v.add_bos = false;
  v.add_space_prefix = false;
  auto push = [&](const std::string& piece, TokenType type) {
    v.pieces.push_back(piece);
    v.scores.push_back(0);
    v.types.push_back(type);
  };
  for (int b = 0; b < 256; ++b) push(ByteLevelBpe::byte_level_spelling(std::string(1, char(b))), TokenType::Normal);
  v.merges = {"\xC4\xA0 t", "h e", "\xC4\xA0t he", "e r", "\xC4\xA0 x", "1 2", "12 3"};
  for (const std::string& m : v.merges) push(m.substr(0, m.find(' ')) + m.substr(m.find(' ') + 1), TokenType::Normal);
  push("<|im_start|>", TokenType::Control);
  push("<|im", TokenType::Control);
  push("<think>", TokenType::UserDefined);
  return Tokenizer(std::move(v));
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
