// Leftmost-longest special-token matching and the end-of-generation set.
#include "model/special_tokens.hpp"

#include <algorithm>
#include <string>

namespace parley {

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) {
  for (int id = 0; id < vocab.size(); ++id) {
    const TokenType t = vocab.types[id];
    const std::string& piece = vocab.pieces[id];
    if ((t == TokenType::Control || t == TokenType::UserDefined) && !piece.empty())
      by_first_byte_[static_cast<unsigned char>(piece[0])].push_back({piece, id});
  }
  for (auto& [byte, candidates] : by_first_byte_)  // longest first; the lower id on equal text
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.piece.size() > b.piece.size(); });
}

std::vector<TextSegment> SpecialTokenMatcher::split(std::string_view text) const {
  std::vector<TextSegment> out;
  size_t plain_from = 0;
  for (size_t i = 0; i < text.size();) {
    const Candidate* found = nullptr;
    if (auto it = by_first_byte_.find(static_cast<unsigned char>(text[i])); it != by_first_byte_.end())
      for (const Candidate& c : it->second)
        if (text.compare(i, c.piece.size(), c.piece) == 0) {
          found = &c;
          break;
        }
    if (!found) {
      ++i;
      continue;
    }
    if (i > plain_from) out.push_back({text.substr(plain_from, i - plain_from)});
    out.push_back({found->piece, found->id});
    i += found->piece.size();
    plain_from = i;
  }
  if (plain_from < text.size()) out.push_back({text.substr(plain_from)});
  return out;
}

std::vector<int> end_of_generation_ids(const Vocab& vocab) {
  static constexpr std::string_view kByText[] = {
      "<|eot_id|>",    "<|eom_id|>",    "<|im_end|>",      "<|end|>", "<|return|>", "<|call|>",
      "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>",   "_<EOT>",     "<｜end▁of▁sentence｜>",
  };
  std::vector<int> ids;
  for (int id : {vocab.eos_id, vocab.eot_id, vocab.eom_id})
    if (id >= 0 && id < vocab.size()) ids.push_back(id);
  for (int id = 0; id < vocab.size(); ++id) {
    const TokenType t = vocab.types[id];
    if (t != TokenType::Control && t != TokenType::UserDefined) continue;
    if (std::find(std::begin(kByText), std::end(kByText), vocab.pieces[id]) != std::end(kByText)) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace parley
