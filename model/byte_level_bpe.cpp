// Byte-level BPE: GPT-2's byte map, rank-ordered merges over token ids, llama.cpp's ignore_merges.
#include "model/byte_level_bpe.hpp"

#include <algorithm>
#include <stdexcept>

namespace parley {
namespace {

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68 bytes take
// the code points from U+0100 on, in byte order.
struct ByteMap {
  std::array<std::string, 256> utf8;  // byte -> its code point, UTF-8 encoded
  std::array<int, 324> byte_of{};     // code point -> byte, -1 outside the map
  ByteMap() {
    byte_of.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      const int cp = printable ? b : next++;
      byte_of[cp] = b;
      utf8[b] = cp < 0x80 ? std::string(1, char(cp)) : std::string{char(0xC0 | (cp >> 6)), char(0x80 | (cp & 0x3F))};
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

// The code point starting at s[i] and its length; a stray byte counts as itself, length 1.
std::pair<uint32_t, size_t> next_code_point(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (len <= 1 || i + len > s.size()) return {c, 1};
  uint32_t cp = c & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return {c, 1};
    cp = cp << 6 | (cc & 0x3F);
  }
  return {cp, len};
}

}  // namespace

std::string ByteLevelBpe::piece_bytes(std::string_view piece) {
  const ByteMap& map = byte_map();
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    const auto [cp, len] = next_code_point(piece, i);
    if (cp < map.byte_of.size() && map.byte_of[cp] >= 0 && (len > 1 || cp < 0x80))
      out += char(map.byte_of[cp]);
    else
      out.append(piece, i, len);
    i += len;
  }
  return out;
}

std::string ByteLevelBpe::byte_level_spelling(std::string_view bytes) {
  const ByteMap& map = byte_map();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += map.utf8[b];
  return out;
}

ByteLevelBpe::ByteLevelBpe(const Vocab& vocab) : pre_(vocab.pre) {
  if (vocab.merges.empty())
    throw std::invalid_argument("byte-level BPE vocabulary has no merges (tokenizer.ggml.merges is missing or empty)");
  for (int id = 0; id < vocab.size(); ++id)
    if (vocab.types[id] == TokenType::Normal || vocab.types[id] == TokenType::Undefined)
      piece_to_id_.try_emplace(vocab.pieces[id], id);
  const ByteMap& map = byte_map();
  for (int b = 0; b < 256; ++b) {
    auto it = piece_to_id_.find(map.utf8[b]);
    byte_id_[b] = it == piece_to_id_.end() ? -1 : it->second;
  }
  merges_.reserve(vocab.merges.size());
  auto id_of = [&](const std::string& piece, int rank, const std::string& line) {
    auto it = piece_to_id_.find(piece);
    if (it == piece_to_id_.end())
      throw std::invalid_argument("tokenizer.ggml.merges[" + std::to_string(rank) + "] = '" + line + "': '" + piece +
                                  "' is not a token of the vocabulary");
    return it->second;
  };
  for (int rank = 0; rank < static_cast<int>(vocab.merges.size()); ++rank) {
    const std::string& line = vocab.merges[rank];
    const size_t space = line.find(' ', 1);  // a left part may start with a space only in broken files
    if (space == std::string::npos || space + 1 >= line.size() || line.find(' ', space + 1) != std::string::npos)
      throw std::invalid_argument("tokenizer.ggml.merges[" + std::to_string(rank) + "] = '" + line +
                                  "' is not two pieces separated by one space");
    const std::string left = line.substr(0, space), right = line.substr(space + 1);
    const int left_id = id_of(left, rank, line), right_id = id_of(right, rank, line);
    merges_.try_emplace(pair_key(left_id, right_id), Merge{rank, id_of(left + right, rank, line)});
  }
}

void ByteLevelBpe::encode(std::string_view text, std::vector<int>& out) const {
  for (const std::string& word : pre_.split(text)) encode_word(word, out);
}

void ByteLevelBpe::encode_word(const std::string& word, std::vector<int>& out) const {
  if (pre_.spec().ignore_merges) {
    if (auto it = piece_to_id_.find(byte_level_spelling(word)); it != piece_to_id_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  // Symbols in a linked list; a candidate merge is stale once either side has changed.
  struct Symbol {
    int id, prev, next;
  };
  struct Candidate {
    int rank, left, left_id, right_id, merged_id;
    bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  thread_local std::vector<Symbol> syms;
  thread_local std::vector<Candidate> heap;  // a max-heap on priority, reused across words
  syms.clear();
  for (unsigned char b : word) {
    const int i = static_cast<int>(syms.size());
    syms.push_back({byte_id_[b], i - 1, i + 1});
  }
  if (syms.empty()) return;
  syms.back().next = -1;
  heap.clear();
  auto consider = [&](int left) {
    if (left < 0 || syms[left].next < 0) return;
    const Symbol& l = syms[left];
    const Symbol& r = syms[l.next];
    if (l.id < 0 || r.id < 0) return;
    auto it = merges_.find(pair_key(l.id, r.id));
    if (it == merges_.end()) return;
    heap.push_back({it->second.rank, left, l.id, r.id, it->second.merged_id});
    std::push_heap(heap.begin(), heap.end());
  };
  for (int i = 0; i + 1 < static_cast<int>(syms.size()); ++i) consider(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& l = syms[c.left];
    if (l.id != c.left_id || l.next < 0 || syms[l.next].id != c.right_id) continue;
    const int right = l.next;
    l.id = c.merged_id;
    l.next = syms[right].next;
    if (l.next >= 0) syms[l.next].prev = c.left;
    syms[right].id = -2;  // dead: no candidate naming it can match again
    consider(l.prev);
    consider(c.left);
  }
  for (int i = 0; i >= 0; i = syms[i].next)
    if (syms[i].id >= 0) out.push_back(syms[i].id);  // a byte the vocabulary lacks is dropped
}

}  // namespace parley
