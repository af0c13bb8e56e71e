// A hand-built byte-level BPE vocabulary for tests and fuzz targets: the 256 byte symbols, then one token per
// merge (in rank order), then the extra pieces given.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "model/byte_level_bpe.hpp"
#include "model/tokenizer.hpp"

namespace parley::test {

inline Vocab byte_level_vocab(const std::vector<std::string>& merges, const std::string& pre = "gpt-2",
                              const std::vector<std::pair<std::string, TokenType>>& extra = {}) {
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
  for (const std::string& m : merges) {
    const size_t space = m.find(' ');
    push(m.substr(0, space) + m.substr(space + 1), TokenType::Normal);
  }
  for (const auto& [piece, type] : extra) push(piece, type);
  v.merges = merges;
  return v;
}

}  // namespace parley::test
